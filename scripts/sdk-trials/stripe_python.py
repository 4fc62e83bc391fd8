# stripe-python (16.x) against a running stack: raw_request for our objects (form-encoded, Idempotency-Key replay,
# list filters, ids[]), Stripe search paging by next_page, a job preview, errors as the SDK's exception types.
# Run: pip install --target <dir> stripe; PYTHONPATH=<dir> KEY=sk_test_... API_BASE=https://localhost:8443
#   CA=.data/tls/cert.pem SSL_CERT_FILE=.data/tls/cert.pem python3 scripts/sdk-trials/stripe_python.py
import os, json, stripe
from stripe import StripeClient
base = os.environ["API_BASE"]; key = os.environ["KEY"]
client = StripeClient(key, base_addresses={"api": base}, max_network_retries=2)
stripe.ca_bundle_path = os.environ["CA"]
# raw_request: create (form-encoded by the SDK, with an Idempotency-Key), retrieve, list with filters
created = []
for i in range(25):
    r = client.raw_request("post", "/v1/resources", name=f"py-{i}", metadata={"plan": "pro" if i % 2 else "free"}, idempotency_key=f"py-trial-{i}")
    created.append(client.deserialize(r, api_mode="V1"))
again = client.raw_request("post", "/v1/resources", name="py-0", metadata={"plan": "free"}, idempotency_key="py-trial-0")
print("replay same id:", client.deserialize(again, api_mode="V1").id == created[0].id)
got = client.deserialize(client.raw_request("get", f"/v1/resources/{created[3].id}"), api_mode="V1")
print("retrieve:", got.id, got.name, got.metadata.plan)
lst = client.deserialize(client.raw_request("get", "/v1/resources", limit=5, **{"metadata[plan]": "pro"}), api_mode="V1")
print("list metadata[plan]=pro:", [r.name for r in lst.data], lst.has_more)
ids = client.deserialize(client.raw_request("get", "/v1/resources", ids=[created[1].id, created[2].id]), api_mode="V1")
print("list ids[]:", sorted(r.name for r in ids.data))
# search auto-paging: a SearchResultObject driven by the SDK's own next_page loop
from stripe import SearchResultObject
page = client.deserialize(client.raw_request("get", "/v1/resources/search", query="metadata['plan']:'pro'", limit=4), api_mode="V1")
print("search first page type:", type(page).__name__, len(page.data), page.has_more, bool(page.next_page))
names = []
p = page
while True:
    names += [r.name for r in p.data]
    if not p.has_more: break
    p = client.deserialize(client.raw_request("get", "/v1/resources/search", query="metadata['plan']:'pro'", limit=4, page=p.next_page), api_mode="V1")
print("search all pages:", len(names), "distinct", len(set(names)))
# preview and a job through raw_request
prev = client.deserialize(client.raw_request("post", "/v1/jobs", type="resources.bulk_update", params={"filter": {"metadata": {"plan": "free"}}, "update": {"status": "paused"}}, validate_only="true"), api_mode="V1")
print("preview:", prev.object, json.dumps(prev.to_dict())[:300])
# errors as the SDK's exception types
try:
    client.raw_request("get", "/v1/resources/res_doesnotexist000000000000")
except stripe.InvalidRequestError as e:
    print("404 as InvalidRequestError:", e.http_status, e.code)
try:
    client.raw_request("get", "/v1/resources/search", query="name~'x'")
except stripe.InvalidRequestError as e:
    print("bad query:", e.http_status, e.code, e.user_message if hasattr(e,'user_message') else "", str(e)[:120])
