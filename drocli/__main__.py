"""`python -m drocli` entry point."""

from drocli.cli import main

if __name__ == "__main__":
    main()
