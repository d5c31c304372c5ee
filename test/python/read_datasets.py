"""Opens every dataset of a road-etl folder with the readers users use, and
prints what each gives as one JSON document: for each dataset and reader, the
number of rows and the type of each column (or the error).

    python read_datasets.py OUTPUT DATASET...

DATASET is a dataset folder relative to OUTPUT (bicycle/measurements, ...).
"""

import json
import os
import sys

import geopandas
import pandas
import polars
import pyarrow
import pyarrow.dataset


def partitioned(folder):
    return partition_column(folder) is not None


def arrow_types(schema):
    return {field.name: str(field.type) for field in schema}


def partition_column(folder):
    for name in sorted(os.listdir(folder)):
        if "=" in name:
            return name.split("=", 1)[0]
    return None


def read_pyarrow(folder):
    # As docs/reading.md says: the partition column given its type (every one is a date).
    column = partition_column(folder)
    partitioning = (
        pyarrow.dataset.partitioning(pyarrow.schema([(column, pyarrow.date32())]), flavor="hive")
        if column
        else None
    )
    dataset = pyarrow.dataset.dataset(folder, format="parquet", partitioning=partitioning)
    table = dataset.to_table()
    return table.num_rows, arrow_types(table.schema)


def read_pandas(folder):
    frame = pandas.read_parquet(folder)
    return len(frame), {name: str(dtype) for name, dtype in frame.dtypes.items()}


def read_polars(folder):
    source = os.path.join(folder, "*", "*.parquet") if partitioned(folder) else os.path.join(folder, "*.parquet")
    frame = polars.scan_parquet(source, hive_partitioning=True, try_parse_hive_dates=True).collect()
    return frame.height, {name: str(dtype) for name, dtype in frame.schema.items()}


def read_geopandas(folder):
    frame = geopandas.read_parquet(folder)
    return len(frame), {
        "crs": frame.crs.to_string() if frame.crs else None,
        "geometry": frame.geometry.name,
        "types": sorted(set(frame.geometry.geom_type.dropna())),
    }


def has_geometry(folder):
    for root, _, names in os.walk(folder):
        for name in names:
            if name.endswith(".parquet"):
                metadata = pyarrow.parquet.read_schema(os.path.join(root, name)).metadata or {}
                return b"geo" in metadata
    return False


def main():
    output = sys.argv[1]
    found = {}
    for name in sys.argv[2:]:
        folder = os.path.join(output, name)
        readers = {"pyarrow": read_pyarrow, "pandas": read_pandas, "polars": read_polars}
        if has_geometry(folder):
            readers["geopandas"] = read_geopandas
        found[name] = {}
        for reader, read in readers.items():
            try:
                rows, types = read(folder)
                found[name][reader] = {"rows": rows, "types": types}
            except Exception as error:  # noqa: BLE001 - reported to the test as it is
                found[name][reader] = {"error": f"{type(error).__name__}: {error}"}
    json.dump(found, sys.stdout)


if __name__ == "__main__":
    import pyarrow.parquet  # noqa: F401

    main()
