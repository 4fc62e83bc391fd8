# The README's stripe-python note, tried (issue 34): its ```python block (after `<!-- sdk-trial: stripe-python`) is
# run as written, then its Resource class pages lists and searches with the filters kept on every page, compared with
# a list made from raw_request + deserialize, whose auto_paging_iter() forgets them and walks the whole account.
# Run against a running stack (it creates 30 resources in the key's account, with metadata unique to the run):
#   pip install --target <dir> "stripe==16.*"; PYTHONPATH=<dir> KEY=sk_test_... API_BASE=https://localhost:8443
#   CA=.data/tls/cert.pem python3 scripts/sdk-trials/stripe_python_paging.py
# Prints one line per check and exits 1 if any fails.
import os, re, sys, uuid
import stripe

readme = open(os.path.join(os.path.dirname(__file__), "..", "..", "README.md"), encoding="utf-8").read()
at = readme.index("<!-- sdk-trial: stripe-python")
block = re.search(r"```python\n(.*?)```", readme[at:], re.S).group(1)
scope = {}
exec(block, scope)
Resource = scope["Resource"]

run = uuid.uuid4().hex[:8]
client = stripe.StripeClient(os.environ["KEY"], base_addresses={"api": stripe.api_base})
pro_active, pro = [], []
for i in range(30):
    plan = f"free-{run}" if i % 3 == 0 else f"pro-{run}"
    status = "paused" if i % 4 == 0 else "active"
    r = client.deserialize(client.raw_request("post", "/v1/resources", name=f"paging {i}", status=status, metadata={"plan": plan}), api_mode="V1")
    if plan.startswith("pro"):
        pro.insert(0, r.id)
        if status == "active":
            pro_active.insert(0, r.id)

failed = 0
def check(name, ok, detail=""):
    global failed
    failed += 0 if ok else 1
    print(("ok   " if ok else "FAIL ") + name + (f": {detail}" if detail and not ok else ""))

page = Resource.list(status="active", metadata={"plan": f"pro-{run}"}, limit=4)
listed = [r.id for r in page.auto_paging_iter()]
check("Resource.list(...).auto_paging_iter() keeps the filters on every page", listed == pro_active, f"{len(listed)} items, expected {len(pro_active)}")
found = [r.id for r in Resource.search(query=f"metadata['plan']:'pro-{run}'", limit=4).auto_paging_iter()]
check("Resource.search(...).auto_paging_iter() follows next_page with the query", found == pro, f"{len(found)} items, expected {len(pro)}")
# The pitfall the README warns of: a list deserialized from raw_request has no memory of its filters.
raw = client.deserialize(client.raw_request("get", "/v1/resources", status="active", metadata={"plan": f"pro-{run}"}, limit=4), api_mode="V1")
walked = sum(1 for _ in raw.auto_paging_iter())
check("a raw_request list's auto_paging_iter() forgets its filters (walks more than the matches)", walked > len(pro_active), f"walked {walked}")
sys.exit(1 if failed else 0)
