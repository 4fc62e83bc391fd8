"""schemathesis hooks for `npm run fuzz` (loaded through SCHEMATHESIS_HOOKS; docs/fuzzing.md explains them).

OpenAPI states types and shapes, not every rule of the API. Where a rule cannot be written in the document, these
hooks change a generated request the way a careful client would write it, so that the checks judge the server and
not the document's limits. A hook changes only values the document itself accepts: a value it calls invalid is
left as it was, so a request generated to be refused is still refused for its own fault. Each rule names where the
API states it.

Requests changed before they are sent (`before_call`):
1. An Idempotency-Key names one request (CONTRACT.md section 5): the fuzzer reuses header values across bodies,
   which the API rightly answers 400 `idempotency_key_reused`, so every valid key is made unique per request.
2. `starting_after` and `ending_before` exclude each other (400, as in Stripe), and so do the events list's `type`
   and `types`: one of the two is dropped.
3. A search's `page` is the `next_page` of an earlier answer to the same query, opaque, and a stream's
   `starting_after` is an item the account was sent (docs/streams.md, "Order and resume"): a generated one is dropped.
4. `recover`'s `since` lies within the last 14 days, a window that moves: a generated time outside it is moved in.
5. The stack delivers events to a webhook endpoint's `url`: any generated url becomes an https URL under the
   reserved `.invalid` name, which reaches no one (and a generated string is rarely a URL the API takes).
6. Request-log filters combine only as an index serves them (docs/request-logs.md): extra filters are dropped.
7. An object's events are listed by `sequence` alone (docs/events.md), and its cursors must be its own events:
   beside `object`, the other filters (`type`, `types`, `created`, `delivery_success`) and generated cursors are
   dropped; without `object`, `sequence` is.
8. A job's `params` take the shape of its `type` (the document lists the shapes; OpenAPI cannot tie one field to
   another's value): `type` is set to the one whose shape the generated `params` have.
9. A form body that cannot say what its JSON says is sent as JSON (both encodings mean the same, CONTRACT.md
   section 1): a list of objects (OpenAPI's form serialization writes `a=x&a=y`, not `a[0][b]=x`), an empty list or
   object (no form text tells "empty" from "absent"), a null (a form has text only: it would be sent as the string
   `null`), or more than 2,000 parameters (the form limit; JSON takes 10,000 where a route allows it).
10. A file's type comes from its name's extension or its part's content type (CONTRACT.md section 11): a part the
    fuzzer names `file` (no extension) with `application/octet-stream` is sent as `text/csv`.
11. A query parameter generated as null or as an empty object is sent as an empty value: the HTTP client leaves
    either out, which would send another request than the one judged (one without the invalid value).
12. The run's own key is never revoked (a client does not revoke the key it works with; every later request would
    be 401): `POST /v1/api_keys/{id}/revoke` of that key's id (`GET /v1/account` names it) names another key instead.

After an answer (`after_call`):
13. An account has at most 16 webhook endpoints per mode (`limit_exceeded`): after each endpoint made, those beyond
    the newest 8 are deleted, so that the limit is never what a valid create meets.

Failures not kept (`filter_failure`), each a refusal of a value whose validity the document cannot describe; the
request is still sent, so a 5xx or a malformed answer is still reported:
14. A search `query` refused for its grammar (400 `search_query_invalid`): a string the query language does not parse.
15. A job's `params[file]` that names no file (400 `parameter_invalid`, "no such file"): an id of the right form that
    was never made (a missing object named in a parameter is 400, as in Stripe).
16. `part_ids` refused by the upload they name (400 `parameter_invalid` on `part_ids`): ids that name no part of it,
    or one part twice (the files API's rule; its document says only "part ids, in order").
17. A part larger than its upload's declared `bytes` (413 `request_too_large`): a body's size tied to another object.
18. A file part generated as other than text (null, a number, a list), taken as a file (ST201): a multipart part is
    bytes, so schemathesis writes such a value as some text (`null`, JSON), which is a file like any other.
19. A request "accepted" though invalid (ST201) whose invalid query parameters were never sent: an empty deepObject
    (`metadata={}`) serializes to nothing, so the request sent is a valid one.

20. A job refused for the account's limit of unfinished jobs (400 `limit_exceeded`, at most 100 queued or running
    per mode, CONTRACT.md section 6): the fuzzer makes jobs faster than one worker finishes them.

And one encoding (`serializer`):
21. A file part of a JSON Lines type (`application/jsonl`, `application/x-ndjson`, which the files API takes) is sent
    as its text: schemathesis has no encoder of those types.
"""

import json
import os
import re
import time
import uuid

import jsonschema_rs
import requests
import schemathesis

VALID_KEY = re.compile(r"^[\x20-\x7e]{1,255}$")
RESERVED_URL = "https://hooks.rms.invalid/fuzz"
# A key id of the right form that names no key: what a revoke of the run's own key is sent with instead.
OTHER_KEY_ID = "key_" + "0" * 22
RESERVED_HTTPS_URL = re.compile(r"^https://([a-z0-9-]+\.)+invalid(/[!-~]*)?$")
RECOVER_WINDOW_S = 14 * 86_400
FORM_PARAMETERS_MAX = 2_000
ENDPOINTS_KEPT = 8
FORM = "application/x-www-form-urlencoded"
# The streams, whose `starting_after` is a resume point (docs/streams.md).
STREAM_PATHS = ("/v1/events/stream", "/v1/request_logs/stream")
# Each accepted combination of request-log filters is one index (docs/request-logs.md); `path` pairs with `method`.
REQUEST_LOG_FILTERS = ("status", "method", "path", "api_key", "idempotency_key", "error_code")
# The job type a shape of `params` is for: the document names it in each shape's description (routes/jobs/params.ts).
JOB_TYPE_IN_DESCRIPTION = re.compile(r"`(resources\.[a-z_]+)`")


# What the document accepts ---------------------------------------------------------------------------------------


def _operation(case):
    return case.operation.definition.raw


def _query_schema(case, name):
    for parameter in _operation(case).get("parameters", []):
        if parameter.get("in") == "query" and parameter.get("name") in (name, f"{name}[]"):
            return parameter.get("schema")
    return None


def _body_schema(case, name):
    content = _operation(case).get("requestBody", {}).get("content", {})
    media = content.get(case.media_type) or content.get("application/json") or {}
    return media.get("schema", {}).get("properties", {}).get(name)


def _typed(value):
    """A query value as its JSON value: the fuzzer may hold a number as the text it sends."""
    if isinstance(value, str) and re.fullmatch(r"-?\d+", value):
        return int(value)
    if value in ("true", "false"):
        return value == "true"
    if isinstance(value, dict):
        return {k: _typed(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_typed(v) for v in value]
    return value


def _accepts(schema, value):
    if schema is None:
        return False
    try:
        return jsonschema_rs.validator_for(schema).is_valid(value)
    except Exception:
        return False


def _accepts_text(schema, value):
    """Whether the document accepts a value sent as text (a query's, a form's): as the text, or as the number it spells."""
    return _accepts(schema, value) or _accepts(schema, _typed(value))


def _query_keys(case, name):
    """The keys of a query parameter in the case: its name, or its deepObject keys (`created[gte]`) as sent."""
    return [key for key in (case.query or {}) if key == name or key.startswith(f"{name}[")]


def _query_value(case, name):
    keys = _query_keys(case, name)
    if keys == [name] or keys == [f"{name}[]"]:
        return case.query[keys[0]]
    return {key[len(name) + 1 : -1]: case.query[key] for key in keys if key.endswith("]")}


def _query_ok(case, name):
    return len(_query_keys(case, name)) > 0 and _accepts_text(_query_schema(case, name), _query_value(case, name))


def _drop_query(case, name):
    for key in _query_keys(case, name):
        del case.query[key]


def _body_ok(case, name):
    body = case.body
    if not isinstance(body, dict) or name not in body:
        return False
    schema = _body_schema(case, name)
    return _accepts_text(schema, body[name]) if case.media_type == FORM else _accepts(schema, body[name])


def _is(case, method, path):
    return case.method.upper() == method and case.operation.path == path


# Requests as a careful client writes them ------------------------------------------------------------------------


def _unique_idempotency_keys(case):
    headers = case.headers or {}
    for name in list(headers):
        if name.lower() == "idempotency-key" and isinstance(headers[name], str) and VALID_KEY.match(headers[name]):
            headers[name] = f"fuzz-{uuid.uuid4().hex}"


def _drop_one_of(case, first, second):
    """Of two query parameters that exclude each other, drop a valid one (the second when both are valid)."""
    if not _query_keys(case, first) or not _query_keys(case, second):
        return
    if _query_ok(case, second):
        _drop_query(case, second)
    elif _query_ok(case, first):
        _drop_query(case, first)


def _fuzz_api(path):
    """GET `path` with the run's key (None when the run's settings are not there or it did not answer 200)."""
    key = os.environ.get("RMS_FUZZ_KEY", "")
    base = os.environ.get("RMS_FUZZ_BASE", "").rstrip("/")
    if not key or not base:
        return None
    verify = os.environ.get("RMS_FUZZ_CA") or False
    answer = requests.get(f"{base}{path}", headers={"Authorization": f"Bearer {key}"}, verify=verify, timeout=10)
    return answer.json() if answer.status_code == 200 else None


_own_key_id = []


def _keep_own_key(case):
    if not _is(case, "POST", "/v1/api_keys/{id}/revoke") or not case.path_parameters:
        return
    if not _own_key_id:
        account = _fuzz_api("/v1/account")
        if account is None:
            return
        _own_key_id.append(account.get("api_key"))
    if case.path_parameters.get("id") == _own_key_id[0]:
        case.path_parameters["id"] = OTHER_KEY_ID


def _no_invented_page(case):
    if _is(case, "GET", "/v1/resources/search") and _query_ok(case, "page"):
        _drop_query(case, "page")
    # A stream resumes after an item the account was sent: a generated id names none.
    for path in STREAM_PATHS:
        if _is(case, "GET", path) and _query_ok(case, "starting_after"):
            _drop_query(case, "starting_after")


def _since_in_window(case):
    if not case.operation.path.endswith("/recover") or not _body_ok(case, "since"):
        return
    since = _typed(case.body["since"])
    now = int(time.time())
    if not now - RECOVER_WINDOW_S + 60 <= since <= now:
        case.body["since"] = now - 3_600


def _reserved_url(case):
    if case.method.upper() != "POST" or not case.operation.path.startswith("/v1/webhook_endpoints") or not _body_ok(case, "url"):
        return
    if not RESERVED_HTTPS_URL.match(case.body["url"]):
        case.body["url"] = RESERVED_URL


def _request_log_filters(case):
    if not _is(case, "GET", "/v1/request_logs") or not case.query:
        return
    given = [name for name in REQUEST_LOG_FILTERS if _query_keys(case, name)]
    if not all(_query_ok(case, name) for name in given):
        return
    keep = {"path", "method"} if {"path", "method"} <= set(given) else set(given[:1])
    for name in given:
        if name not in keep:
            _drop_query(case, name)


def _event_filters(case):
    if _query_ok(case, "object"):
        # An object's events are paged by their sequence: a cursor is one of that object's events, which a generated
        # id is not (the example ids name none).
        for name in ("type", "types", "created", "delivery_success", "starting_after", "ending_before"):
            if _query_ok(case, name):
                _drop_query(case, name)
    elif not _query_keys(case, "object") and _query_ok(case, "sequence"):
        _drop_query(case, "sequence")


def _null_query_sent_empty(case):
    for key, value in list((case.query or {}).items()):
        if value is None or value == {}:
            case.query[key] = ""


def _job_type_of_params(case):
    if not _is(case, "POST", "/v1/jobs") or not _body_ok(case, "type") or not _body_ok(case, "params"):
        return
    params = case.body["params"]
    if case.media_type == FORM:
        params = _typed(params)
    # The types whose shape the params have (a filter alone is a bulk delete's or an export's).
    fits = []
    schema = _body_schema(case, "params") or {}
    for shape in schema.get("anyOf", []) + schema.get("oneOf", []):
        named = JOB_TYPE_IN_DESCRIPTION.search(shape.get("description", ""))
        if named and _accepts(shape, params):
            fits.append(named.group(1))
    if fits and case.body["type"] not in fits:
        case.body["type"] = fits[0]


def _form_leaves(value):
    if isinstance(value, dict):
        return sum(_form_leaves(v) for v in value.values())
    if isinstance(value, list):
        return sum(_form_leaves(v) for v in value)
    return 1


def _form_cannot_say(value):
    if value is None:
        return True
    if isinstance(value, dict):
        return len(value) == 0 or any(_form_cannot_say(v) for v in value.values())
    if isinstance(value, list):
        return len(value) == 0 or any(v is None or isinstance(v, (dict, list)) for v in value)
    return False


def _json_when_form_cannot_say(case):
    body = case.body
    if case.media_type != FORM or not isinstance(body, dict):
        return
    if any(_form_cannot_say(v) for v in body.values()) or _form_leaves(body) > FORM_PARAMETERS_MAX:
        case.media_type = "application/json"


def _typed_file_part(case):
    types = case.multipart_content_types
    body = case.body
    if _is(case, "POST", "/v1/files") and types and types.get("file") == "application/octet-stream" and isinstance(body, dict):
        if isinstance(body.get("file"), (str, bytes)):
            types["file"] = "text/csv"


@schemathesis.hook
def before_call(ctx, case, **kwargs):
    _unique_idempotency_keys(case)
    _drop_one_of(case, "starting_after", "ending_before")
    _no_invented_page(case)
    _since_in_window(case)
    _reserved_url(case)
    _keep_own_key(case)
    _request_log_filters(case)
    _null_query_sent_empty(case)
    if _is(case, "GET", "/v1/events"):
        _drop_one_of(case, "type", "types")
        _event_filters(case)
    _job_type_of_params(case)
    _json_when_form_cannot_say(case)
    _typed_file_part(case)


# The account's limits --------------------------------------------------------------------------------------------


@schemathesis.hook
def after_call(ctx, case, response):
    if _is(case, "POST", "/v1/webhook_endpoints") and response.status_code == 201:
        _keep_newest_endpoints()


def _keep_newest_endpoints():
    key = os.environ.get("RMS_FUZZ_KEY", "")
    base = os.environ.get("RMS_FUZZ_BASE", "").rstrip("/")
    if not key or not base:
        return
    auth = {"Authorization": f"Bearer {key}"}
    verify = os.environ.get("RMS_FUZZ_CA") or False
    listed = requests.get(f"{base}/v1/webhook_endpoints?limit=100", headers=auth, verify=verify, timeout=10)
    if listed.status_code != 200:
        return
    for endpoint in listed.json().get("data", [])[ENDPOINTS_KEPT:]:
        requests.delete(f"{base}/v1/webhook_endpoints/{endpoint['id']}", headers=auth, verify=verify, timeout=10)


# Refusals of what the document cannot describe -------------------------------------------------------------------


def _error_of(response):
    try:
        return json.loads(response.content.decode("utf-8")).get("error", {})
    except Exception:
        return {}


def _unsent_query_parameter(failure, case):
    """Whether every query parameter the failure calls invalid is absent from the request sent."""
    named = re.findall(r"`([^`]+)`", re.sub(r"\s+", " ", failure.message).split(" in query")[0]) if " in query" in failure.message else []
    return len(named) > 0 and all(not _query_keys(case, name) for name in named)


@schemathesis.hook
def filter_failure(ctx, failure, case, response):
    if failure.code == "ST201" and _is(case, "POST", "/v1/files") and isinstance(case.body, dict) and not isinstance(case.body.get("file"), (str, bytes)):
        return False
    if failure.code == "ST201" and _unsent_query_parameter(failure, case):
        return False
    if failure.code != "ST202":
        return True
    error = _error_of(response)
    if response.status_code == 400 and _is(case, "GET", "/v1/resources/search") and error.get("code") == "search_query_invalid":
        return False
    if response.status_code == 400 and _is(case, "POST", "/v1/jobs") and error.get("param") == "params[file]" and "no such file" in error.get("message", ""):
        return False
    if response.status_code == 400 and _is(case, "POST", "/v1/uploads/{id}/complete") and error.get("param") == "part_ids":
        return False
    if response.status_code == 413 and _is(case, "POST", "/v1/uploads/{id}/parts") and error.get("code") == "request_too_large":
        return False
    if response.status_code == 400 and _is(case, "POST", "/v1/jobs") and error.get("code") == "limit_exceeded" and "unfinished" in error.get("message", ""):
        return False
    return True


@schemathesis.serializer("application/jsonl", "application/x-ndjson")
def json_lines(ctx, value):
    if isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode("utf-8")
    return (json.dumps(value) + "\n").encode("utf-8")
