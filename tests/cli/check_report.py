#!/usr/bin/python3
"""Checks an mlcc --report JSON for internal consistency.

usage: check_report.py REPORT.json [--flops FLOPS.json]

The per-kernel figures must sum to the totals (code: kernels plus the code
outside them; weights; operations), the largest arena end over the calls must
be the arena size, the memory plan must never give two buffers that are live
at the same time overlapping bytes, each call's live buffers and live bytes
must follow from the plan, and every ONNX node must appear in one call only.
With --flops (tests/models/make_models.py --flops), the reported operations
must be at least the model's convolution and matrix-product FLOPs and at most
15% more (the rest is activations, pooling, additions).
Prints one line per figure; exits 1 on the first mismatch.
"""
import json
import sys


def fail(msg):
    print(f"check_report: FAIL: {msg}")
    sys.exit(1)


def main():
    args = sys.argv[1:]
    if not args:
        print(__doc__)
        sys.exit(2)
    r = json.load(open(args[0]))
    calls = r["fused_kernels"]
    plan = r["memory_plan"]
    if len(calls) != r["calls"]:
        fail(f"{len(calls)} fused kernels listed, {r['calls']} calls")

    if "code_bytes" in r:
        own = sum(c["code_bytes"] for c in calls)
        for c in calls:
            if "shares_code_with_call" in c:
                if c["code_bytes"] != 0:
                    fail(f"call {c['call']} shares code but counts {c['code_bytes']} bytes")
            elif c["code_bytes"] <= 0:
                fail(f"call {c['call']} ({c['kernel']}) has no code bytes")
        if own + r["code_bytes_outside_kernels"] != r["code_bytes"]:
            fail(f"code: kernels {own} + outside {r['code_bytes_outside_kernels']} != {r['code_bytes']}")
        if r["code_bytes_outside_kernels"] < 0:
            fail("negative code outside the kernels")
        print(f"code: {own} in kernels + {r['code_bytes_outside_kernels']} outside = {r['code_bytes']}")

    w = sum(c["weight_bytes"] for c in calls)
    if w != r["weight_bytes"]:
        fail(f"weights: kernels sum to {w}, total {r['weight_bytes']}")
    if w != sum(x["bytes"] for x in r["weights"]):
        fail("weights: the weight list does not sum to the total")
    print(f"weights: {w} = {r['weight_bytes']}")

    ops = sum(c["ops"] for c in calls)
    if ops != r["ops"] or ops <= 0:
        fail(f"ops: kernels sum to {ops}, total {r['ops']}")
    print(f"ops: {ops} = {r['ops']}")

    # Data movement per run: the calls' copied and filled bytes sum to the
    # totals; a copy call does no arithmetic, a fill call copies nothing.
    for key in ("copied_bytes", "filled_bytes"):
        total = sum(c[key] for c in calls)
        if total != r[key]:
            fail(f"{key}: kernels sum to {total}, total {r[key]}")
    copies = [c for c in calls if c["ops"] == 0 and c["copied_bytes"] + c["filled_bytes"] > 0]
    fills = [c for c in copies if c["copied_bytes"] == 0]
    if len(copies) != r["copy_calls"] or len(fills) != r["fill_calls"]:
        fail(f"copy calls {len(copies)} / fill calls {len(fills)} against "
             f"{r['copy_calls']} / {r['fill_calls']}")
    print(f"per run: {len(calls)} calls, {r['copy_calls']} copies ({r['fill_calls']} fills), "
          f"{r['copied_bytes']} bytes copied, {r['filled_bytes']} filled")

    end = max((c["arena_end"] for c in calls), default=0)
    if end != r["arena_bytes"]:
        fail(f"arena: largest end over the calls {end} != arena {r['arena_bytes']}")
    align = r["arena_align"]
    used = [b for b in plan if b["first_call"] >= 0]
    for b in used:
        if b["offset"] % align or b["offset"] + b["bytes"] > r["arena_bytes"]:
            fail(f"buffer {b['buffer']} at {b['offset']}+{b['bytes']} is misaligned or outside the arena")
    # A part of a buffer (a Concat input written in place) lies inside it
    # and within its lifetime; only whole buffers must not overlap.
    for b in used:
        if "part_of" in b:
            whole = plan[b["part_of"]]
            if not (whole["offset"] <= b["offset"] and b["offset"] + b["bytes"] <= whole["offset"] + whole["bytes"]
                    and whole["first_call"] <= b["first_call"] and b["last_call"] <= whole["last_call"]):
                fail(f"buffer {b['buffer']} is not inside buffer {b['part_of']}")
    wholes = [b for b in used if "part_of" not in b]
    for i, a in enumerate(wholes):
        for b in wholes[i + 1:]:
            live_together = a["first_call"] <= b["last_call"] and b["first_call"] <= a["last_call"]
            disjoint = a["offset"] + a["bytes"] <= b["offset"] or b["offset"] + b["bytes"] <= a["offset"]
            # An output laid over an input that dies in the call writing it
            # first (the kernel's access order allows it): they share bytes
            # in that call only.
            laid = (b.get("laid_over") == a["buffer"] and a["last_call"] == b["first_call"]) or \
                   (a.get("laid_over") == b["buffer"] and b["last_call"] == a["first_call"])
            if live_together and not disjoint and a["bytes"] and b["bytes"] and not laid:
                fail(f"buffers {a['buffer']} and {b['buffer']} are live together and overlap")
    for c in calls:
        live = [b["buffer"] for b in used if b["first_call"] <= c["call"] <= b["last_call"]]
        if sorted(live) != sorted(c["live_buffers"]):
            fail(f"call {c['call']}: live buffers {c['live_buffers']}, plan says {live}")
        total = sum(plan[b]["bytes"] for b in live if "part_of" not in plan[b])
        for b in live:  # an output laid over an input dying here: shared bytes once
            x = plan[b]
            if "laid_over" in x and x["first_call"] == c["call"]:
                y = plan[x["laid_over"]]
                if y["last_call"] == c["call"]:
                    total -= max(0, min(x["offset"] + x["bytes"], y["offset"] + y["bytes"]) -
                                 max(x["offset"], y["offset"]))
        if total != c["arena_live_bytes"]:
            fail(f"call {c['call']}: live bytes do not match the plan")
    laid = sum(1 for b in used if "laid_over" in b)
    print(f"arena: {end} = {r['arena_bytes']}; {len(used)} buffers, none overlapping while live "
          f"(but {laid} laid over an input dying in the call that writes them)")

    names = [n["name"] for c in calls for n in c["nodes"]]
    if len(names) != len(set(names)):
        fail("a node appears in two kernel calls")
    for c in calls:
        if not c["nodes"] and "what" not in c:
            fail(f"call {c['call']} names no node")
    print(f"nodes: {len(names)} in {len(calls)} calls")

    if len(args) == 3 and args[1] == "--flops":
        flops = json.load(open(args[2]))["flops"]
        ratio = ops / flops
        print(f"ops: {ops} against {flops} convolution/matrix FLOPs from PyTorch: {ratio:.4f}")
        # Winograd F(2x2, 3x3) does 2.25x fewer multiply-adds for the 3x3
        # convolutions it takes, so the count of what the kernels execute
        # may be as low as FLOPs / 2.25, never lower.
        if not 1 / 2.25 <= ratio <= 1.15:
            fail("the operation count is not within [1/2.25, 1.15] of the model's FLOPs")


main()
