"""A results folder: what a run leaves and what plot, check and report read.

Open `records.py` first: the tidy records.csv.gz and the per-cell files of a run in
progress. `manifest.py` and `provenance.py` say how the numbers were made; `integrity.py`,
`rederive.py` and `flags.py` say whether the folder is still what its run wrote;
`reference.py` compares a run with recorded results; `aggregate.py` turns records into the
seed summaries figures and claims share. Reading a folder never needs the plug-ins that
made it.
"""
