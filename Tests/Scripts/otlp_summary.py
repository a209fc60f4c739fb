"""Reads an OTLP profiles request with OpenTelemetry's own Python classes (PyPI opentelemetry-proto)
and prints what the tests check, as JSON: python otlp_summary.py FILE"""
import json
import sys

from opentelemetry.proto.collector.profiles.v1development import profiles_service_pb2

request = profiles_service_pb2.ExportProfilesServiceRequest()
with open(sys.argv[1], "rb") as file:
    request.ParseFromString(file.read())
tables = request.dictionary
strings = tables.string_table


def attribute(index):
    entry = tables.attribute_table[index]
    which = entry.value.WhichOneof("value")
    value = getattr(entry.value, which) if which in ("string_value", "int_value") else which
    return strings[entry.key_strindex], value


zero_values = (strings[0] == "" and tables.mapping_table[0].ByteSize() == 0 and tables.location_table[0].ByteSize() == 0
               and tables.function_table[0].ByteSize() == 0 and tables.link_table[0].ByteSize() == 0
               and tables.attribute_table[0].ByteSize() == 0 and tables.stack_table[0].ByteSize() == 0)
resource = request.resource_profiles[0]
summary = {
    "zeroValues": zero_values,
    "resource": {kv.key: kv.value.string_value for kv in resource.resource.attributes if kv.value.HasField("string_value")},
    "scope": resource.scope_profiles[0].scope.name,
    "profiles": [],
}
for profile in resource.scope_profiles[0].profiles:
    start, end = profile.time_unix_nano, profile.time_unix_nano + profile.duration_nano
    threads, spans, leaves, links = set(), set(), {}, set()
    for sample in profile.samples:
        if sample.link_index:
            link = tables.link_table[sample.link_index]
            links.add(link.trace_id.hex() + "/" + link.span_id.hex())
        for key, value in map(attribute, sample.attribute_indices):
            if key == "thread.name":
                threads.add(value)
            if key == "liftoff.span":
                spans.add(value)
        stack = tables.stack_table[sample.stack_index].location_indices
        if stack:
            leaf = tables.function_table[tables.location_table[stack[0]].lines[0].function_index]
            name = strings[leaf.name_strindex]
            leaves[name] = leaves.get(name, 0) + sum(sample.values)
    summary["profiles"].append({
        "type": strings[profile.sample_type.type_strindex],
        "unit": strings[profile.sample_type.unit_strindex],
        "periodType": strings[profile.period_type.type_strindex],
        "period": profile.period,
        "total": sum(sum(sample.values) for sample in profile.samples),
        "timesMatchValues": all(len(s.timestamps_unix_nano) == len(s.values) for s in profile.samples),
        "timesInside": all(start <= t <= end for s in profile.samples for t in s.timestamps_unix_nano),
        "profileID": len(profile.profile_id) == 16 and any(profile.profile_id),
        "attributes": dict(attribute(index) for index in profile.attribute_indices if attribute(index)[1] != "array_value"),
        "threads": sorted(threads),
        "spans": sorted(spans),
        "leaves": leaves,
        "links": sorted(links),
    })
print(json.dumps(summary))
