"""What happens to a record whose key or order value is NULL, decided once for the Python
package: ``kplex.null_key`` (``fail``, ``drop``) and ``kplex.null_order`` (``fail``,
``drop``, ``first``). The JVM writer's ``wire.NullPolicy`` applies the same table; the
shared vectors in ``tests/vectors/null_policy.json`` pin both.

====  =====  ========  ==========  =====================================
key   order  null_key  null_order  record
====  =====  ========  ==========  =====================================
NULL  any    fail      any         refused: ``KPLEX_NULL_KEY``
NULL  any    drop      any         dropped
set   NULL   any       fail        refused: ``KPLEX_NULL_ORDER``
set   NULL   any       drop        dropped
set   NULL   any       first       kept, ordered first
set   set    any       any         kept
====  =====  ========  ==========  =====================================

>>> null_verdict(key_is_null=True, order_is_null=False, null_key="drop", null_order="fail")
'dropped'
>>> null_verdict(key_is_null=False, order_is_null=True, null_key="fail", null_order="fail")
'KPLEX_NULL_ORDER'
"""
from __future__ import annotations

__all__ = ["DROPPED", "KEPT", "null_verdict"]

KEPT = "kept"
DROPPED = "dropped"


def null_verdict(*, key_is_null: bool, order_is_null: bool, null_key: str, null_order: str) -> str:
    """:data:`KEPT`, :data:`DROPPED`, or the error code of a NULL the policy refuses."""
    if key_is_null:
        return DROPPED if null_key == "drop" else "KPLEX_NULL_KEY"
    if order_is_null and null_order != "first":
        return DROPPED if null_order == "drop" else "KPLEX_NULL_ORDER"
    return KEPT
