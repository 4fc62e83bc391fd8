"""schemathesis hooks for `npm run fuzz` (loaded through SCHEMATHESIS_HOOKS).

Two rules of the API that OpenAPI cannot state, applied so that "valid" requests are valid:
- an Idempotency-Key names one request: schemathesis reuses generated header values across
  different bodies, which the API rightly answers 400 idempotency_key_reused, so every valid key
  is made unique per request (invalid ones are left, to test their rejection);
- `starting_after` and `ending_before` are mutually exclusive (400 when both are given).
"""
import re
import uuid

import schemathesis

VALID_KEY = re.compile(r"^[\x20-\x7e]{1,255}$")


@schemathesis.hook
def before_call(ctx, case, **kwargs):
    headers = case.headers or {}
    for name in list(headers):
        if name.lower() == "idempotency-key" and isinstance(headers[name], str) and VALID_KEY.match(headers[name]):
            headers[name] = f"fuzz-{uuid.uuid4().hex}"


@schemathesis.hook
def filter_query(ctx, query):
    return not (query and query.get("starting_after") and query.get("ending_before"))
