"""Reads a dataset.jsonld with rdflib and prints, as JSON, what DCAT-AP-NL 3.0
requires of its Dataset and each Distribution and does not find.

    python check_dcat.py DATASET_JSONLD

The mandatory properties (minCount 1) are those of the profile's SHACL shapes
(github.com/Geonovum/DCAT-AP-NL30, shapes/300/dcat-ap-SHACL.ttl and
dcat-ap-nl-SHACL.ttl, 2024-12-12).
"""

import json
import sys

from rdflib import BNode, Graph, Namespace, RDF

DCAT = Namespace("http://www.w3.org/ns/dcat#")
DCT = Namespace("http://purl.org/dc/terms/")

MANDATORY = {
    DCAT.Dataset: [
        DCT.title,
        DCT.description,
        DCT.identifier,
        DCT.publisher,
        DCAT.contactPoint,
        DCT.creator,
        DCT.accessRights,
        DCAT.theme,
    ],
    DCAT.Distribution: [DCAT.accessURL, DCT.license],
}


def main():
    graph = Graph().parse(sys.argv[1], format="json-ld")
    found = {"datasets": [], "distributions": 0, "missing": [], "csv_schemas": {}}
    for kind, properties in MANDATORY.items():
        for node in graph.subjects(RDF.type, kind):
            if kind == DCAT.Dataset:
                found["datasets"].append(
                    {"node": str(node), "blank": isinstance(node, BNode), "identifier": str(graph.value(node, DCT.identifier))}
                )
            else:
                found["distributions"] += 1
                title = str(graph.value(node, DCT.title))
                schema = graph.value(node, DCT.conformsTo)
                if title.endswith(".csv"):
                    found["csv_schemas"][title] = str(schema) if schema is not None else None
            for prop in properties:
                if graph.value(node, prop) is None:
                    found["missing"].append(f"{kind.n3(graph.namespace_manager)} {node}: {prop.n3(graph.namespace_manager)}")
    json.dump(found, sys.stdout)


if __name__ == "__main__":
    main()
