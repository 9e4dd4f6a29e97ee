"""A real agent run against the mock, then every request it made (from the
mock's journal) validated against the assisted-service API definition:
path and method, path and query parameters, authentication scheme, JSON
body against its schema, multipart fields, and that the answer is one the
operation declares. The definition is taken as is, plus exactly this
project's two documented extensions (the two new host stages, `host_boot`
as a logs type); against an upstream-compat mock the agent must pass
without them."""

import copy
import re
import urllib.parse

import jsonschema
import pytest
import yaml

from conftest import SWAGGER

NEW_STAGES = ["Booted with local ignition", "Booted with control plane ignition"]


def load_swagger(with_extensions: bool) -> dict:
    spec = yaml.safe_load(SWAGGER.read_text())
    if not with_extensions:
        return spec
    spec = copy.deepcopy(spec)
    stages = spec["definitions"]["host-stage"]["enum"]
    # As the enhancement documents it: right after Rebooting, right before Joined.
    stages.insert(stages.index("Rebooting") + 1, NEW_STAGES[0])
    stages.insert(stages.index("Joined"), NEW_STAGES[1])
    for method in ("post", "get"):
        for p in spec["paths"]["/v2/clusters/{cluster_id}/logs"][method]["parameters"]:
            if p["name"] == "logs_type":
                p["enum"].append("host_boot")
    return spec


class Operation:
    def __init__(self, spec, template, method, op, path_params):
        self.spec, self.template, self.method, self.op = spec, template, method, op
        self.params = path_params + op.get("parameters", [])
        self.security = op.get("security", spec.get("security", []))

    def param(self, where, name):
        return next((p for p in self.params if p["in"] == where and p["name"] == name), None)

    def of(self, where):
        return [p for p in self.params if p["in"] == where]


def find_operation(spec, method, path):
    for template, item in spec["paths"].items():
        pattern = "^" + re.sub(r"\\\{[^}]+\\\}", "([^/]+)", re.escape(template)) + "$"
        m = re.match(pattern, path)
        if m and method.lower() in item:
            names = re.findall(r"\{([^}]+)\}", template)
            op = Operation(spec, template, method, item[method.lower()], item.get("parameters", []))
            return op, dict(zip(names, (urllib.parse.unquote(v) for v in m.groups())))
    return None, None


UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


def check_value(param, value, problems, where):
    if param.get("format") == "uuid" and not UUID.match(value):
        problems.append(f"{where} {param['name']}={value!r} is not a uuid")
    if "enum" in param and value not in param["enum"]:
        problems.append(f"{where} {param['name']}={value!r} is not one of {param['enum']}")
    if param.get("type") == "boolean" and value not in ("true", "false"):
        problems.append(f"{where} {param['name']}={value!r} is not a boolean")


# How the mock's journal classes a request's credentials, per scheme.
AUTH_SCHEMES = {"agent": {"agentAuth"}, "user": {"userAuth", "urlAuth"}}


def validate(spec, record) -> list:
    """Everything wrong with one journaled request; empty if it conforms."""
    base = spec["basePath"]
    where = f"{record['method']} {record['path']}?{record['query']}"
    if not record["path"].startswith(base + "/"):
        return [f"{where}: not under {base}"]
    op, path_values = find_operation(spec, record["method"], record["path"][len(base):])
    if op is None:
        return [f"{where}: no such operation in the API definition"]
    problems = []
    for name, value in path_values.items():
        param = op.param("path", name)
        if param is None:
            problems.append(f"path parameter {name} is not declared")
        else:
            check_value(param, value, problems, "path")

    query = urllib.parse.parse_qsl(record["query"], keep_blank_values=True)
    names = [k for k, _ in query]
    for k, v in query:
        param = op.param("query", k)
        if param is None:
            if k == "api_key" and any("urlAuth" in s for s in op.security):
                continue
            problems.append(f"query parameter {k!r} is not declared by {op.op['operationId']}")
        else:
            check_value(param, v, problems, "query")
        if names.count(k) > 1:
            problems.append(f"query parameter {k!r} is repeated")
    for p in op.of("query"):
        if p.get("required") and p["name"] not in names:
            problems.append(f"required query parameter {p['name']!r} is missing")

    allowed = {name for s in op.security for name in s}
    if not AUTH_SCHEMES.get(record["auth"], set()) & allowed:
        problems.append(f"authenticated as {record['auth']!r}; the operation accepts {sorted(allowed)}")

    body_params = op.of("body")
    ctype = (record.get("content_type") or "").split(";")[0].strip()
    if body_params:
        body = body_params[0]
        if ctype != "application/json":
            problems.append(f"body sent as {ctype!r}, not application/json")
        elif "body" not in record:
            problems.append("the JSON body was not captured (too large or not JSON)")
        else:
            # Refs point into the definition's `definitions`, so carry them along.
            schema = {"definitions": spec["definitions"], **body["schema"]}
            for err in jsonschema.Draft4Validator(schema).iter_errors(record["body"]):
                problems.append(f"body: {err.message} at {list(err.absolute_path)}")
    form = op.of("formData")
    if form:
        if "multipart/form-data" not in op.op.get("consumes", []) or ctype != "multipart/form-data":
            problems.append(f"form sent as {ctype!r}; the operation consumes {op.op.get('consumes')}")
        declared = {p["name"] for p in form}
        for f in record.get("form_fields", []):
            if f not in declared:
                problems.append(f"multipart field {f!r} is not declared")
    if not body_params and not form and record["body_bytes"]:
        problems.append(f"{record['body_bytes']} body bytes sent to an operation that takes no body")

    if record["status"] and str(record["status"]) not in op.op["responses"] and "default" not in op.op["responses"]:
        problems.append(f"answered {record['status']}, which the operation does not declare")
    return [f"{where}: {p}" for p in problems]


def agent_requests(mock):
    mock.reseed()
    run = mock.run_agent()
    assert run.returncode == 0, run.stdout + run.stderr
    records = mock.admin("/admin/requests")
    assert records, "the agent made no requests"
    return records


@pytest.fixture(scope="module")
def enhanced_run(mock):
    return agent_requests(mock)


def test_agent_requests_conform_to_the_extended_definition(enhanced_run):
    spec = load_swagger(with_extensions=True)
    problems = [p for r in enhanced_run for p in validate(spec, r)]
    assert problems == []
    ops = {(r["method"], find_operation(spec, r["method"], r["path"][len(spec["basePath"]):])[0].op["operationId"])
           for r in enhanced_run}
    # What a first boot does: read its host, set the new stage, ship host_boot.
    assert {("GET", "v2ListHosts"), ("PUT", "v2UpdateHostInstallProgress"), ("POST", "V2UploadLogs")} <= ops
    stages = [r["body"]["current_stage"] for r in enhanced_run if r["method"] == "PUT"]
    assert stages and set(stages) == {NEW_STAGES[0]}
    uploads = [r for r in enhanced_run if r["method"] == "POST"]
    assert all(urllib.parse.parse_qs(r["query"])["logs_type"] == ["host_boot"] for r in uploads)
    assert all(r["form_fields"] == ["upfile"] for r in uploads)
    refused = [(r["method"], r["path"], r["auth"], r["status"]) for r in enhanced_run
               if r["auth"] != "agent" or r["status"] not in (200, 204)]
    assert refused == []


def test_the_extensions_are_what_the_agent_needs(enhanced_run):
    """Against the plain definition the same run fails exactly on the two
    documented extensions, and on nothing else."""
    plain = load_swagger(with_extensions=False)
    problems = [p for r in enhanced_run for p in validate(plain, r)]
    assert problems, "the enhanced run should use the extensions"
    for p in problems:
        assert ("logs_type='host_boot'" in p) or ("'Booted with local ignition' is not one of" in p), p


def test_upstream_fallback_conforms_to_the_plain_definition(upstream_mock):
    """On today's upstream the agent falls back to progress_info; its
    accepted requests need no extension at all."""
    records = agent_requests(upstream_mock)
    plain = load_swagger(with_extensions=False)
    accepted = [r for r in records if 200 <= r["status"] < 300]
    assert accepted
    problems = [p for r in accepted for p in validate(plain, r)]
    assert problems == []
    infos = [r["body"].get("progress_info", "") for r in accepted if r["method"] == "PUT"]
    assert any("Booted with local ignition" in i for i in infos), infos


def test_validator_catches_nonconforming_requests():
    """The validator itself: each of these breaks one rule."""
    spec = load_swagger(with_extensions=True)
    ie = "7e1d4c2b-8a39-4f6e-b0d5-3a9c2e7f1b64"
    good = {
        "method": "PUT", "path": f"/api/assisted-install/v2/infra-envs/{ie}/hosts/{ie}/progress", "query": "",
        "auth": "agent", "status": 200, "body_bytes": 40, "content_type": "application/json",
        "body": {"current_stage": "Rebooting"}, "form_fields": [],
    }
    assert validate(spec, good) == []
    cases = {
        "not one of": dict(good, body={"current_stage": "Rebooted"}),
        "is not of type": dict(good, body={"current_stage": "Rebooting", "progress_info": 7}),
        "accepts": dict(good, auth="user"),
        "not a uuid": dict(good, path=good["path"].replace(ie, "x", 1)),
        "no such operation": dict(good, method="DELETE"),
        "not declared by": dict(good, query="with-inventory=true"),
        "not application/json": dict(good, content_type="text/plain"),
        "does not declare": dict(good, status=418),
    }
    for expected, record in cases.items():
        problems = validate(spec, record)
        assert any(expected in p for p in problems), (expected, problems)
    upload = {
        "method": "POST", "path": f"/api/assisted-install/v2/clusters/{ie}/logs", "query": f"host_id={ie}",
        "auth": "agent", "status": 204, "body_bytes": 900, "content_type": "multipart/form-data; boundary=x",
        "form_fields": ["file"],
    }
    problems = validate(spec, upload)
    assert any("required query parameter 'logs_type'" in p for p in problems)
    assert any("multipart field 'file'" in p for p in problems)
