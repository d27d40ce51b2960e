"""Keyset paging with opaque tokens (list, scope, last key); any other token
answers ABORTED, so a client restarts from the first page."""
import base64
import json

import grpc

from ccm_provider_sdk import ProviderError
from ccm_provider_sdk import invalid_argument as invalid

DEFAULT_PAGE_SIZE = 100
MAX_PAGE_SIZE = 1000


def paginate(keys, page_size, token, list_name, scope):
    """Returns (page of sorted keys after token, next token)."""
    if page_size < 0:
        raise invalid(f"page_size must be >= 0, got {page_size}")
    size = min(page_size or DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE)
    after = None
    if token:
        try:
            body = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
            if body.get("l") != list_name or body.get("s") != scope or not isinstance(body.get("k"), str):
                raise ValueError("token of another list")
            after = body["k"]
        except (ValueError, TypeError, AttributeError):
            raise ProviderError(grpc.StatusCode.ABORTED, f"invalid page token for {list_name}: start again from the first page")
    rest = [k for k in sorted(keys) if after is None or k > after]
    page = rest[:size]
    next_token = ""
    if len(rest) > size:
        raw = json.dumps({"l": list_name, "s": scope, "k": page[-1]}).encode()
        next_token = base64.urlsafe_b64encode(raw).decode().rstrip("=")
    return page, next_token
