"""drocli.run: Running cells: expansion, runner, looks, workers, pools, backends, limits."""
