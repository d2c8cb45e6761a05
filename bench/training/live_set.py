#!/usr/bin/env python3
"""Prints the memory lower bound of an HLO text program's entry, in bytes:
inputs (parameters) + outputs (what the root tuple reads) + the largest
total of the other values alive at once, walking the entry in its order and
freeing a value after its last reader (a get-tuple-element reads its tuple
and is free itself). Used by bench/run_training_jax.sh on the XLA-fused
forms of bench/training (their fusions hold no intermediate in memory).
With --traffic: the bytes the entry's instructions other than dots read and
write (operands + results; a fusion's intermediates are not counted), a
figure of fusion that no load on the machine changes.

  live_set.py PROGRAM.hlo [-v | --traffic]
"""

import re
import sys

SIZES = {"f32": 4, "bf16": 2, "f16": 2, "s32": 4, "u32": 4, "pred": 1, "f64": 8, "s64": 8}
ARRAY = re.compile(r"\b(%s)\[([0-9,]*)\]" % "|".join(SIZES))


def arrays(shape):
    out = []
    for t, dims in ARRAY.findall(shape):
        n = 1
        for d in filter(None, dims.split(",")):
            n *= int(d)
        out.append(n * SIZES[t])
    return out


def entry(text):
    body = text[text.index("ENTRY"):]
    insts = []
    for line in body.splitlines()[1:]:
        line = re.sub(r"/\*.*?\*/", "", line)  # /*index=5*/ in long operand lists
        m = re.match(r"\s*(ROOT\s+)?%?([\w.\-]+) = (\([^=]*?\)|\S+) ([\w\-]+)\((.*)", line)
        if not m:
            continue
        root, name, shape, op, rest = m.groups()
        args = rest.split(")")[0]
        ops = re.findall(r"%?([\w.\-]+)", args) if op != "parameter" and op != "constant" else []
        idx = re.search(r"index=(\d+)", rest)
        insts.append(dict(name=name, shape=shape, op=op, ops=ops, root=bool(root),
                          index=int(idx.group(1)) if idx else None))
    return insts


def bound(text, verbose=False):
    insts = entry(text)
    by = {i["name"]: i for i in insts}
    root = next(i for i in insts if i["root"])
    outputs = set(root["ops"]) if root["op"] == "tuple" else {root["name"]}
    inputs = sum(sum(arrays(i["shape"])) for i in insts if i["op"] == "parameter")
    out_bytes = sum(sum(arrays(by[o]["shape"])) for o in outputs)
    # A tuple's elements that are outputs are counted as outputs, not here.
    own = {}
    for i in insts:
        if i["op"] in ("parameter", "get-tuple-element", "tuple") or i["name"] in outputs:
            own[i["name"]] = 0
        else:
            own[i["name"]] = sum(arrays(i["shape"]))
    for i in insts:
        if i["op"] == "get-tuple-element" and i["name"] in outputs:
            t = by[i["ops"][0]]
            own[t["name"]] -= arrays(t["shape"])[i["index"]]
    last = {}
    for k, i in enumerate(insts):
        for o in i["ops"]:
            last[o] = k
    live, peak, at = 0, 0, None
    for k, i in enumerate(insts):
        live += own[i["name"]]
        if live > peak:
            peak, at = live, i["name"]
        for o in set(i["ops"]):
            if last.get(o) == k and o in own:
                live -= own[o]
        if i["name"] not in last:
            live -= own[i["name"]]
    if verbose:
        print("inputs %d, outputs %d, largest live set %d (at %s)" % (inputs, out_bytes, peak, at),
              file=sys.stderr)
    return inputs + out_bytes + peak


def traffic(text):
    insts = entry(text)
    by = {i["name"]: i for i in insts}

    def size(n):
        i = by[n]
        if i["op"] == "get-tuple-element":
            return arrays(by[i["ops"][0]]["shape"])[i["index"]]
        return sum(arrays(i["shape"]))
    total = 0
    for i in insts:
        if i["op"] in ("parameter", "constant", "get-tuple-element", "tuple", "dot"):
            continue
        total += sum(arrays(i["shape"])) + sum(size(o) for o in set(i["ops"]) if o in by)
    return total


if __name__ == "__main__":
    with open(sys.argv[1]) as f:
        text = f.read()
    print(traffic(text) if "--traffic" in sys.argv else bound(text, "-v" in sys.argv))
