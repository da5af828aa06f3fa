"""Where file-backed data should be read on a dask cluster: on the workers (each with its own
data folder) or in the client, shipping the arrays to the workers.

Measured on a LocalCluster of one single-thread worker process (so the arrays really cross a
process boundary) with the Fashion-MNIST set at the gdro_fashion_mnist spec's sizes:
  (a) a task loads the data on the worker (files, then drocli's decoded-array cache),
  (b) the client loads the data and `client.scatter`s them, then a task touches them,
each repeated, interleaved, best of 3. Prints one Markdown table row per way.

    python benchmarks/cluster_data.py
"""

from __future__ import annotations

import time

from dask.distributed import Client, LocalCluster

from drocli.plugins import registry

PARAMS = {"n_train": 6000, "n_test": 1000}


def load():
    from drocli.run.worker import forget_data, load_data

    forget_data()                # every call reads the files (or the decoded cache) again
    entry = registry.get("data", "fashion_mnist")
    return load_data("fashion_mnist", registry.resolve_params(entry, PARAMS), 0)


def touch(data) -> int:
    return int(data.X_train.shape[0])


def main():
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        client.submit(load, pure=False).result()            # warm imports and the cache
        data = load()
        nbytes = data.X_train.nbytes + data.X_test.nbytes
        best = {"worker reads": float("inf"), "client ships": float("inf")}
        for _ in range(3):
            t0 = time.perf_counter()
            client.submit(touch, client.submit(load, pure=False)).result()
            best["worker reads"] = min(best["worker reads"], time.perf_counter() - t0)
            t0 = time.perf_counter()
            fut = client.scatter(load())
            client.submit(touch, fut).result()
            best["client ships"] = min(best["client ships"], time.perf_counter() - t0)
            del fut
        print(f"Fashion-MNIST {PARAMS}: {nbytes / 2**20:.0f} MiB of float32 arrays")
        print("| way | seconds per data set (best of 3) |")
        print("|---|---|")
        for k, v in best.items():
            print(f"| {k} | {v:.2f} |")


if __name__ == "__main__":
    main()
