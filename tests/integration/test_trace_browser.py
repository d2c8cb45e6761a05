"""A --trace file of a real 4-rank job loaded in a real browser: headless
Chromium (Debian's chromium) opens tests/integration/trace_viewer.html, which
parses the trace text, checks it against the trace-event format (phases, dur,
nesting per thread, flows paired and bound to slices) and draws the spans and
flow arrows. The page's verdict is read from --dump-dom; a screenshot goes to
the build tree's Testing/artifacts/trace_browser/. A trace broken on purpose
(an unpaired flow, overlapping slices, cut-off JSON) must make the page say
ERROR. The expected counts come from the program: neighbour exchange over two
channels between ranks 0<->1 and 2<->3, one send per channel and pair.
"""

import json
import os
import shutil
import subprocess
import tempfile

import hl_testlib as hl

VIEWER = os.path.join(hl.SOURCE_DIR, "tests", "integration", "trace_viewer.html")
ARTIFACTS = os.path.join(os.environ.get("HL_BINARY_DIR", os.getcwd()), "Testing", "artifacts",
                         "trace_browser")
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                  "--no-first-run", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync",
                  "--allow-file-access-from-files"]


def chromium():
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    return None


def browse(trace_text, mode_args, workdir):
    """Opens the viewer on trace_text; returns the CompletedProcess."""
    page_dir = tempfile.mkdtemp(dir=workdir)
    shutil.copy(VIEWER, os.path.join(page_dir, "trace_viewer.html"))
    with open(os.path.join(page_dir, "trace_data.js"), "w") as f:
        f.write("var TRACE_TEXT = %s;\n" % json.dumps(trace_text))
    profile = tempfile.mkdtemp(dir=workdir)
    argv = [chromium()] + CHROMIUM_FLAGS + ["--user-data-dir=" + profile] + mode_args + \
        ["file://" + os.path.join(page_dir, "trace_viewer.html")]
    return subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60,
                          universal_newlines=True)


def verdict(trace_text, workdir):
    res = browse(trace_text, ["--dump-dom"], workdir)
    marker = '<div id="verdict">'
    at = res.stdout.find(marker)
    if res.returncode != 0 or at < 0:
        return None, "chromium --dump-dom exit %d\n%s\n%s" % (res.returncode, res.stdout[-2000:],
                                                             res.stderr[-2000:])
    return res.stdout[at + len(marker):].split("</div>")[0], None


def record_trace(workdir):
    tmpl = open(os.path.join(hl.PROGRAMS_DIR, "channels", "bidir_dangerous.hlo.tmpl")).read()
    prog = os.path.join(workdir, "bidir.hlo")
    open(prog, "w").write(tmpl.replace("@EVEN_TO_ODD@", "{{0,1},{2,3}}")
                          .replace("@ODD_TO_EVEN@", "{{1,0},{3,2}}"))
    out = os.path.join(workdir, "t.json")
    res = hl.run([hl.HLO_LAUNCH, "-np", "4", "--timeout", "50", "-q", "--trace", out, prog],
                 timeout=60)
    if res.returncode != 0:
        return None, res.describe()
    return open(out).read(), None


def test_trace_in_chromium():
    with hl.tempdir("trace_browser") as d:
        text, err = record_trace(d)
        if err:
            return err
        trace = json.loads(text)
        spans = sum(1 for e in trace["traceEvents"] if e["ph"] == "X")
        got, err = verdict(text, d)
        if err:
            return err
        # 4 ranks; one flow per channel and pair (1: 0>1, 2>3; 2: 1>0, 3>2).
        want = "OK: %d spans, 4 ranks, 4 flows" % spans
        if got != want:
            return "the page says %r, expected %r" % (got, want)
        os.makedirs(ARTIFACTS, exist_ok=True)
        shot = os.path.join(ARTIFACTS, "bidir_4_ranks.png")
        if os.path.exists(shot):
            os.remove(shot)
        res = browse(text, ["--screenshot=" + shot, "--window-size=1200,400",
                            "--hide-scrollbars"], d)
        if res.returncode != 0 or not os.path.exists(shot):
            return "no screenshot\n" + res.stderr[-2000:]
        with open(shot, "rb") as f:
            if f.read(8) != b"\x89PNG\r\n\x1a\n":
                return "the screenshot is not a PNG"
        shutil.copy(os.path.join(d, "t.json"), os.path.join(ARTIFACTS, "bidir_4_ranks.json"))
    return None


def test_progress_track_in_chromium():
    """A 2-rank async all-reduce around a long dot (trace_async_overlap.hlo) over
    MPI: the page accepts the trace and draws a "progress thread" row per rank
    (each rank's progress thread completes the all-reduce while it computes);
    the screenshot shows them."""
    with hl.tempdir("trace_browser") as d:
        out = os.path.join(d, "t.json")
        res = hl.launch(os.path.join(hl.PROGRAMS_DIR, "debug", "trace_async_overlap.hlo"), 2, 1,
                        extra=("--trace", out, "--collectives", "mpi", "-q"))
        if res.returncode != 0:
            return res.describe()
        text = open(out).read()
        spans = sum(1 for e in json.loads(text)["traceEvents"] if e["ph"] == "X")
        dom = browse(text, ["--dump-dom"], d)
        want = '<div id="verdict">OK: %d spans, 2 ranks, 0 flows</div>' % spans
        if dom.returncode != 0 or want not in dom.stdout:
            return "expected %r in the page\n%s" % (want, dom.stdout[-2000:])
        for r in range(2):
            if "pid %d / progress thread" % r not in dom.stdout:
                return "no progress thread row for rank %d in the page\n%s" % (
                    r, dom.stdout[-2000:])
        os.makedirs(ARTIFACTS, exist_ok=True)
        shot = os.path.join(ARTIFACTS, "async_allreduce_2_ranks.png")
        if os.path.exists(shot):
            os.remove(shot)
        res = browse(text, ["--screenshot=" + shot, "--window-size=1200,300",
                            "--hide-scrollbars"], d)
        if res.returncode != 0 or not os.path.exists(shot):
            return "no screenshot\n" + res.stderr[-2000:]
        shutil.copy(out, os.path.join(ARTIFACTS, "async_allreduce_2_ranks.json"))
    return None


def test_malformed_traces_are_rejected():
    with hl.tempdir("trace_browser") as d:
        text, err = record_trace(d)
        if err:
            return err
        trace = json.loads(text)
        events = trace["traceEvents"]
        broken = {}
        # A flow end whose start is gone.
        first_s = next(i for i, e in enumerate(events) if e["ph"] == "s")
        broken["unpaired flow"] = dict(trace, traceEvents=events[:first_s] + events[first_s + 1:])
        # Two slices of one thread that overlap without nesting.
        x = next(e for e in events if e["ph"] == "X" and e["dur"] > 0.1)
        bad = dict(x, ts=x["ts"] + x["dur"] / 2, dur=x["dur"], name="overlap")
        broken["overlap"] = dict(trace, traceEvents=events + [bad])
        # A complete event without its duration.
        broken["no dur"] = dict(trace, traceEvents=events + [{k: v for k, v in x.items()
                                                              if k != "dur"}])
        cases = [(name, json.dumps(t)) for name, t in broken.items()]
        cases.append(("cut-off JSON", text[:len(text) // 2]))
        for name, bad_text in cases:
            got, err = verdict(bad_text, d)
            if err:
                return err
            if not got.startswith("ERROR: "):
                return "%s: the page says %r" % (name, got)
    return None


if __name__ == "__main__":
    hl.require_binaries("hlo-launch")
    if not chromium():
        raise SystemExit("chromium is not installed (apt-get install chromium; "
                         "scripts/common.sh lists it)")
    hl.main([
        ("trace_in_chromium", test_trace_in_chromium),
        ("progress_track_in_chromium", test_progress_track_in_chromium),
        ("malformed_traces_are_rejected", test_malformed_traces_are_rejected),
    ])
