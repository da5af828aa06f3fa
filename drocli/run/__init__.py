"""Running a spec: cells in, records out.

Open `runner.py` first: it expands the spec into cells (`cells.py`), skips those a folder
already holds, runs the rest in parallel and merges what comes back. One cell's run is
`worker.py`'s: data, problem, and the solver under the checkpoint `monitor.py`. Where cells
run: local worker processes (`pool.py`), threads (`in_process.py`) or dask
(`backends.py`), each under its wall limit (`limits.py`). `until_decided.py` runs a
sequential plan look by look; `resume.py` recognises a re-run with nothing to do.
"""
