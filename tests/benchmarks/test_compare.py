#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Self-test of benchmarks/compare.py, comm_table.py and the torch-free paths of the benchmark
scripts (no GPU)."""

import importlib.util
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest
from contextlib import redirect_stderr, redirect_stdout

# Keep __pycache__ out of the source tree, here and in the scripts run as subprocesses.
sys.dont_write_bytecode = True
os.environ["PYTHONDONTWRITEBYTECODE"] = "1"

SOURCE_DIR = os.environ.get("LOOM_SOURCE_DIR") or os.path.abspath(
    os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
BENCH_DIR = os.path.join(SOURCE_DIR, "benchmarks")
sys.path.insert(0, BENCH_DIR)
import comm_table  # noqa: E402
import compare  # noqa: E402
import sweep_table  # noqa: E402

TORCH_IMPORTABLE = importlib.util.find_spec("torch") is not None

# shared/docs/performance.md's baselines: (case, dtype, eager us, eager TB/s, compile us, compile TB/s).
DOC_BASELINES = [
    ("var_mean_1x2048x12288", "fp32", 55.1, 1.83, 33.7, 2.99),
    ("var_mean_16x2048x12288", "fp32", 640.3, 2.52, 375.2, 4.29),
    ("layer_norm_16384x4096", "fp32", 183.7, 2.92, 130.0, 4.13),
    ("rms_norm_16384x4096", "fp32", 179.7, 2.99, 129.0, 4.16),
    ("softmax_16384x4096", "fp32", 212.4, 2.53, 163.4, 3.29),
    ("gelu_tanh_bias_16384x4096", "fp32", 325.3, 1.65, 131.1, 4.09),
    ("sum_dim0_16384x4096", "fp32", 84.1, 3.19, 75.7, 3.55),
    ("var_mean_1x2048x12288", "bf16", 50.2, 1.00, 38.0, 1.33),
    ("var_mean_16x2048x12288", "bf16", 635.6, 1.27, 209.7, 3.84),
    ("layer_norm_16384x4096", "bf16", 107.2, 2.50, 97.1, 2.76),
    ("rms_norm_16384x4096", "bf16", 84.0, 3.19, 77.1, 3.48),
    ("softmax_16384x4096", "bf16", 212.1, 1.27, 159.6, 1.68),
    ("gelu_tanh_bias_16384x4096", "bf16", 243.8, 1.10, 92.2, 2.91),
    ("sum_dim0_16384x4096", "bf16", 55.4, 2.42, 51.1, 2.63),
]
# Cases added since the last GPU run: no baseline in performance.md yet (it says so).
UNMEASURED = {"linear_8192x4096x16384", "linear_gelu_tanh_8192x4096x16384", "transpose_8192x8192", "transpose_16384x768",
              "transpose_4096x12288", "gelu_bias_t_8192x8192", "gelu_bias_t_16384x768",
              "gelu_bias_t_4096x12288", "copy_8192x8192", "bn_fwd_nchw_32x256x56x56",
              "bn_fwd_nhwc_32x256x56x56", "bn_bwd_nchw_32x256x56x56", "bn_bwd_nhwc_32x256x56x56",
              "layer_norm_bwd_16384x4096", "rms_norm_bwd_16384x4096", "layer_norm_bwd_65536x768",
              "to_nhwc_256x512x7x7", "to_nhwc_256x256x14x14", "to_nhwc_128x64x56x56",
              "index_add_32768x1024_into_50257"}


def torch_doc():
    return {"schema": compare.TORCH_SCHEMA, "gpu": "NVIDIA H200", "date": "2026-12-02",
            "results": [{"case": c, "dtype": d, "eager_us": e, "compile_us": k}
                        for c, d, e, _, k, _ in DOC_BASELINES],
            "host_overhead": [{"case": compare.HOST_CASE, "eager_us_per_call": 54.8,
                               "compile_us_per_call": 44.1}]}


def write_json(tmp, name, doc):
    path = os.path.join(tmp, name)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(doc, f)
    return path


def run_main(argv):
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        rc = compare.main(argv)
    return rc, out.getvalue(), err.getvalue()


class BytesTest(unittest.TestCase):
    # The byte counts reproduce every TB/s figure of performance.md's baseline table (to 0.01: the
    # documented times are rounded to 0.1 us).
    def test_bytes_match_documented_bandwidth(self):
        for name, dtype, eager_us, eager_tbps, compile_us, compile_tbps in DOC_BASELINES:
            nbytes = compare.io_bytes(compare.case_by_name(name), dtype)
            self.assertAlmostEqual(compare.tbps(nbytes, eager_us), eager_tbps, delta=0.01,
                                   msg=f"{name} {dtype} eager")
            self.assertAlmostEqual(compare.tbps(nbytes, compile_us), compile_tbps, delta=0.01,
                                   msg=f"{name} {dtype} compile")

    # Inputs are read once and outputs written once: layer_norm counts x, weight, bias and y.
    def test_layer_norm_bytes_count_weight_and_bias(self):
        case = compare.case_by_name("layer_norm_16384x4096")
        self.assertEqual(compare.io_bytes(case, "bf16"), (2 * 16384 * 4096 + 2 * 4096) * 2)

    # var_mean writes two outputs of the reduced shape.
    def test_var_mean_bytes_count_two_outputs(self):
        case = compare.case_by_name("var_mean_16x2048x12288")
        self.assertEqual(compare.io_bytes(case, "fp32"), (16 * 2048 * 12288 + 2 * 16 * 2048) * 4)

    # An unknown dtype is a user error that names the accepted ones.
    def test_unknown_dtype_rejected(self):
        with self.assertRaisesRegex(ValueError, "unknown dtype 'fp16'.*fp32, bf16"):
            compare.io_bytes(compare.CASES[0], "fp16")

    # Every case of the performance table is present exactly once, with a unique name.
    def test_case_table_complete(self):
        names = [c.name for c in compare.CASES]
        self.assertEqual(len(set(names)), 27)
        self.assertEqual(sorted(set(n for n, *_ in DOC_BASELINES) | UNMEASURED), sorted(names))


class RowsTest(unittest.TestCase):
    # Without Loom numbers the Loom columns, ratio and goal show "-" and torch times still print.
    def test_torch_only_shows_dashes(self):
        rows = compare.build_rows(torch_doc(), None)
        self.assertEqual(len(rows), 14)
        cells = rows[0]["cells"]
        self.assertEqual(cells[:2], ["var_mean dim 2, [1, 2048, 12288]", "fp32"])
        self.assertEqual(cells[2:5], ["-", "-", "-"])
        self.assertEqual(cells[5:7], ["55.1", "33.7"])
        self.assertEqual(cells[7], "-")
        self.assertEqual(cells[9], "-")

    # Loom TB/s, fraction of 4.26 TB/s and compile/Loom come from the Loom time and case bytes.
    def test_loom_columns_computed(self):
        loom = {"results": [{"case": "softmax_16384x4096", "dtype": "fp32", "loom_us": 130.0}]}
        row = [r for r in compare.build_rows(torch_doc(), loom)
               if r["case"] == "softmax_16384x4096" and r["dtype"] == "fp32"][0]
        nbytes = compare.io_bytes(compare.case_by_name("softmax_16384x4096"), "fp32")
        self.assertAlmostEqual(row["loom_tbps"], nbytes / 130e-6 / 1e12)
        self.assertAlmostEqual(row["fraction"], row["loom_tbps"] / 4.26)
        self.assertAlmostEqual(row["ratio"], 163.4 / 130.0)
        self.assertEqual(row["cells"][2:5], ["130.0", "4.13", "0.97"])
        self.assertEqual(row["cells"][7], "1.26x")
        self.assertEqual(row["goal"], "ok")

    # A Loom time above torch.compile's, or under 90% of the ceiling on a large case, misses the goal.
    def test_goal_misses_flagged(self):
        loom = [{"case": "sum_dim0_16384x4096", "dtype": "fp32", "loom_us": 80.0},
                {"case": "var_mean_1x2048x12288", "dtype": "bf16", "loom_us": 30.0}]
        rows = {(r["case"], r["dtype"]): r for r in compare.build_rows(torch_doc(), loom)}
        self.assertEqual(rows[("sum_dim0_16384x4096", "fp32")]["goal"], "slower,bw")
        # The small var_mean case is not held to the bandwidth goal.
        self.assertEqual(rows[("var_mean_1x2048x12288", "bf16")]["goal"], "ok")

    # Loom results alone (no torch file) still make a table.
    def test_loom_only(self):
        loom = [{"case": "rms_norm_16384x4096", "dtype": "bf16", "loom_us": 70.0}]
        rows = compare.build_rows(None, loom)
        self.assertEqual(len(rows), 1)
        self.assertEqual(rows[0]["cells"][5:8], ["-", "-", "-"])

    # A case unknown to compare.py is kept (after the known ones), uses its own bytes, and warns.
    def test_unknown_case_appended_with_warning(self):
        warnings = []
        loom = [{"case": "my_new_case", "dtype": "fp32", "loom_us": 10.0, "bytes": 42_600_000}]
        rows = compare.build_rows(torch_doc(), loom, warnings.append)
        self.assertEqual(rows[-1]["case"], "my_new_case")
        self.assertAlmostEqual(rows[-1]["loom_tbps"], 4.26)
        self.assertEqual(len(warnings), 1)
        self.assertIn("my_new_case", warnings[0])

    # A Loom entry without a positive loom_us is rejected with the case named.
    def test_bad_loom_time_rejected(self):
        loom = [{"case": "softmax_16384x4096", "dtype": "bf16", "loom_us": -3}]
        with self.assertRaisesRegex(ValueError, "softmax_16384x4096.*'loom_us' must be a positive"):
            compare.build_rows(None, loom)

    # A bad dtype, a missing case name and a duplicate entry are each rejected.
    def test_malformed_entries_rejected(self):
        with self.assertRaisesRegex(ValueError, "dtype 'f32' is not one of fp32, bf16"):
            compare.build_rows(None, [{"case": "x", "dtype": "f32", "loom_us": 1}])
        with self.assertRaisesRegex(ValueError, "missing 'case'"):
            compare.build_rows(None, [{"dtype": "fp32", "loom_us": 1}])
        dup = [{"case": "x", "dtype": "fp32", "loom_us": 1}] * 2
        with self.assertRaisesRegex(ValueError, "appears twice"):
            compare.build_rows(None, dup)
        with self.assertRaisesRegex(ValueError, "list of entries"):
            compare.build_rows(None, {"results": 3})


class RenderTest(unittest.TestCase):
    # The main table is printed last: its header follows the host table and its last row ends the text.
    def test_table_last(self):
        loom = {"gpu": "NVIDIA H200", "results": [], "compile_ms": {"cold": 120.0, "warm": 1.5},
                "host_overhead": [{"case": compare.HOST_CASE, "loom_us_per_call": 4.0}]}
        text = compare.render(torch_doc(), loom)
        lines = text.splitlines()
        self.assertTrue(lines[-1].startswith("sum dim 0, [16384, 4096]"), lines[-1])
        self.assertIn("bf16", lines[-1])
        header = [i for i, ln in enumerate(lines) if ln.startswith("case ")][0]
        host = [i for i, ln in enumerate(lines) if ln.startswith("host overhead case")][0]
        self.assertLess(host, header)
        self.assertIn("pointwise3_1024", text)
        self.assertIn("4.0", lines[host + 2])
        self.assertIn("loom compile ms: cold 120.0, warm 1.50 (goals: cold <= 150, warm <= 2)", text)
        self.assertEqual(len(lines) - header - 2, 14)

    # A case loom_bench checked as wrong (FAIL) or could not run (ERROR) says so in the goal column,
    # and the probe errors are printed.
    def test_failed_checks_shown(self):
        loom = {"results": [
            {"case": "softmax_16384x4096", "dtype": "fp32", "loom_us": 100.0, "check": "FAIL"},
            {"case": "sum_dim0_16384x4096", "dtype": "fp32", "check": "ERROR", "error": "boom"},
            {"case": "rms_norm_16384x4096", "dtype": "fp32", "loom_us": 100.0, "check": "PASS"}],
            "compile_error": "cold compile probe failed: x"}
        rows = {r["case"]: r for r in compare.build_rows(torch_doc(), loom)
                if r["dtype"] == "fp32"}
        self.assertEqual(rows["softmax_16384x4096"]["goal"], "FAIL")
        self.assertEqual(rows["sum_dim0_16384x4096"]["goal"], "ERROR")
        self.assertEqual(rows["sum_dim0_16384x4096"]["cells"][2], "-")
        self.assertEqual(rows["rms_norm_16384x4096"]["goal"], "ok")
        self.assertIn("loom compile error: cold compile probe failed: x",
                      compare.render(None, loom))

    # Markdown output is a pipe table with one separator cell per column.
    def test_markdown(self):
        text = compare.format_table(["a", "b"], [["1", "2"]], markdown=True)
        self.assertEqual(text, "| a | b |\n|---|---|\n| 1 | 2 |")

    # Text tables align every column to its widest cell.
    def test_text_alignment(self):
        text = compare.format_table(["case", "dtype", "us"], [["x", "fp32", "1.5"],
                                                             ["longer", "bf16", "100.0"]])
        lines = text.splitlines()
        self.assertEqual(lines[2], "x       fp32     1.5")
        self.assertEqual(lines[3], "longer  bf16   100.0")


class SweepTableTest(unittest.TestCase):
    """sweep_table.py: one line per result with its parameters; unreadable files are reported."""

    def test_rows_and_unreadable(self):
        with tempfile.TemporaryDirectory() as d:
            good = os.path.join(d, "sweep1.json")
            with open(good, "w", encoding="utf-8") as f:
                json.dump({"results": [{"case": "sum_dim0_16384x4096", "dtype": "fp32",
                                        "loom_us": 70.5, "loom_tbps": 3.81, "check": "PASS",
                                        "params": "Reduction: outer bdimx=16\n"}]}, f)
            rows = sweep_table.rows([good, os.path.join(d, "missing.json")])
        self.assertEqual(rows[0][1:6], ("sum_dim0_16384x4096", "fp32", 70.5, 3.81, "PASS"))
        self.assertEqual(rows[0][6], "Reduction: outer bdimx=16")
        self.assertEqual(rows[1][5], "UNREADABLE")


class CommTableTest(unittest.TestCase):
    """comm_table.py: minima over runs, ratios and +us from them, each run's own ratio kept."""

    HEADER = ("collective,bytes,ranks,backend,transport,raw,batch,raw_us,raw_min_us,raw_host_us,"
              "raw_host_min_us,raw_algbw_gbps,raw_busbw_gbps,comm_us,comm_min_us,comm_host_us,"
              "comm_host_min_us,comm_algbw_gbps,comm_busbw_gbps,fusion_us,fusion_min_us,"
              "fusion_host_us,fusion_host_min_us,fusion_algbw_gbps,fusion_busbw_gbps,comm_over_raw,"
              "fusion_over_raw,comm_host_above_us,fusion_host_above_us,check\n")

    def write(self, d, name, raw_min, comm_min, fusion_min, comm_over_raw, ranks=2):
        path = os.path.join(d, name)
        fusion = f"1,{fusion_min},1,1,1,1" if fusion_min is not None else ",,,,,"
        with open(path, "w", encoding="utf-8") as f:
            f.write(self.HEADER)
            f.write(f"allreduce,1048576,{ranks},host,mpi,MPI,1,1,{raw_min},1,1,1,1,"
                    f"1,{comm_min},1,1,1,1,{fusion},{comm_over_raw},,0,,ok\n")
        return path

    def test_minima_over_runs(self):
        with tempfile.TemporaryDirectory() as d:
            a = self.write(d, "a.csv", 100.0, 110.0, 200.0, 0.90)
            b = self.write(d, "b.csv", 80.0, 100.0, 160.0, 1.10)
            lines = comm_table.table([a, b]).splitlines()
        self.assertEqual(len(lines), 3)
        cells = [c.strip() for c in lines[2].strip("|").split("|")]
        # raw 80, comm 100, fusion 160; busbw = 1 MiB / 80 us x 2(n-1)/n = 13.11 GB/s.
        self.assertEqual(cells[:8], ["allreduce", "1 MiB", "80.0", "100.0", "160.0", "13.11",
                                     "0.80", "0.50"])
        self.assertEqual(cells[8:10], ["20.0", "80.0"])
        self.assertEqual(cells[10], "1.00 (0.90-1.10)")
        self.assertEqual(cells[11], "-")

    def test_one_rank_has_no_fusion_or_busbw(self):
        with tempfile.TemporaryDirectory() as d:
            a = self.write(d, "a.csv", 10.0, 10.5, None, 0.95, ranks=1)
            cells = [c.strip() for c in comm_table.table([a]).splitlines()[2].strip("|").split("|")]
        self.assertEqual(cells[4:8], ["-", "-", "0.95", "-"])
        self.assertEqual(cells[10], "0.95")

    def test_mixed_rank_counts_are_refused(self):
        with tempfile.TemporaryDirectory() as d:
            a = self.write(d, "a.csv", 10.0, 10.5, 11.0, 0.95, ranks=2)
            b = self.write(d, "b.csv", 10.0, 10.5, 11.0, 0.95, ranks=4)
            with self.assertRaises(ValueError):
                comm_table.table([a, b])


class CliTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp()

    def tearDown(self):
        shutil.rmtree(self.tmp)

    # The command line merges two files, prints the report and writes it to --out.
    def test_merge_files(self):
        t = write_json(self.tmp, "torch.json", torch_doc())
        lm = write_json(self.tmp, "loom.json",
                        [{"case": "layer_norm_16384x4096", "dtype": "fp32", "loom_us": 125.0}])
        out = os.path.join(self.tmp, "table.txt")
        rc, stdout, _ = run_main(["--torch", t, "--loom", lm, "--out", out])
        self.assertEqual(rc, 0)
        self.assertIn("125.0", stdout)
        self.assertIn("1.04x", stdout)
        with open(out, encoding="utf-8") as f:
            self.assertEqual(f.read(), stdout)

    # A file that is not JSON fails with exit 1 and a message naming it.
    def test_bad_json_reports_path(self):
        path = os.path.join(self.tmp, "loom.json")
        with open(path, "w", encoding="utf-8") as f:
            f.write("{not json")
        rc, _, stderr = run_main(["--loom", path])
        self.assertEqual(rc, 1)
        self.assertIn("loom JSON", stderr)
        self.assertIn(path, stderr)

    # A missing file fails with exit 1 and names it.
    def test_missing_file(self):
        rc, _, stderr = run_main(["--torch", os.path.join(self.tmp, "nope.json")])
        self.assertEqual(rc, 1)
        self.assertIn("cannot read the torch JSON", stderr)


class ScriptsWithoutTorchTest(unittest.TestCase):
    def run_script(self, args, env=None):
        return subprocess.run(args, capture_output=True, text=True, env=env, timeout=60)

    # torch_baseline.py rejects fewer than 20 repetitions before touching torch.
    def test_reps_minimum(self):
        p = self.run_script([sys.executable, os.path.join(BENCH_DIR, "torch_baseline.py"),
                             "--out", os.devnull, "--reps", "5"])
        self.assertEqual(p.returncode, 2)
        self.assertIn("at least 20", p.stderr)

    # torch_baseline.py rejects unknown case names and lists the known ones.
    def test_unknown_case(self):
        p = self.run_script([sys.executable, os.path.join(BENCH_DIR, "torch_baseline.py"),
                             "--out", os.devnull, "--cases", "softmax"])
        self.assertEqual(p.returncode, 2)
        self.assertIn("unknown case(s) softmax", p.stderr)
        self.assertIn("softmax_16384x4096", p.stderr)

    # Without torch, torch_baseline.py exits 2 and says to run on the GPU machine.
    @unittest.skipIf(TORCH_IMPORTABLE, "torch is importable here")
    def test_no_torch_message(self):
        p = self.run_script([sys.executable, os.path.join(BENCH_DIR, "torch_baseline.py"),
                             "--out", os.devnull])
        self.assertEqual(p.returncode, 2)
        self.assertIn("run this on the GPU machine", p.stderr)

    # run_all.sh runs a Loom binary, survives a failing torch side and still prints the table.
    @unittest.skipIf(TORCH_IMPORTABLE, "torch is importable here (would run the real benchmark)")
    @unittest.skipIf(shutil.which("bash") is None, "bash not found")
    def test_run_all_with_fake_loom_bench(self):
        tmp = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, tmp)
        fake = os.path.join(tmp, "loom_bench")
        with open(fake, "w", encoding="utf-8") as f:
            f.write('#!/bin/sh\n[ "$1" = --json ] || exit 3\n'
                    'echo \'[{"case": "softmax_16384x4096", "dtype": "bf16", "loom_us": 150}]\''
                    ' > "$2"\n')
        os.chmod(fake, 0o755)
        out = os.path.join(tmp, "out")
        env = dict(os.environ, LOOM_BENCH=fake)
        p = self.run_script(["bash", os.path.join(BENCH_DIR, "run_all.sh"), out], env)
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)  # the torch side failed
        self.assertIn("torch_baseline.py exited with 2", p.stderr)
        last = p.stdout.rstrip().splitlines()[-1]
        self.assertTrue(last.startswith("softmax dim -1, [16384, 4096]  bf16"), last)
        self.assertIn("150.0", last)
        for name in ("loom.json", "loom.log", "torch.log", "table.txt", "table.md"):
            self.assertTrue(os.path.exists(os.path.join(out, name)), name)


    # run_all.sh passes the shared options on to loom_bench (not --skip-compile, which means
    # torch.compile there), and still tabulates a JSON from a loom_bench that exited non-zero.
    @unittest.skipIf(TORCH_IMPORTABLE, "torch is importable here (would run the real benchmark)")
    @unittest.skipIf(shutil.which("bash") is None, "bash not found")
    def test_run_all_forwards_options_and_keeps_failed_json(self):
        tmp = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, tmp)
        fake = os.path.join(tmp, "loom_bench")
        args_file = os.path.join(tmp, "args.txt")
        with open(fake, "w", encoding="utf-8") as f:
            f.write('#!/bin/sh\necho "$@" > ' + args_file + '\n'
                    'echo \'{"results": [{"case": "softmax_16384x4096", "dtype": "bf16", '
                    '"loom_us": 150, "check": "FAIL"}]}\' > "$2"\nexit 1\n')
        os.chmod(fake, 0o755)
        out = os.path.join(tmp, "out")
        env = dict(os.environ, LOOM_BENCH=fake)
        p = self.run_script(["bash", os.path.join(BENCH_DIR, "run_all.sh"), out, "--",
                             "--cases", "softmax_16384x4096", "--dtypes=bf16", "--reps", "30",
                             "--skip-compile", "--skip-host", "--timer", "triton"], env)
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertIn("loom_bench exited with 1", p.stderr)
        with open(args_file, encoding="utf-8") as f:
            self.assertEqual(f.read().split(), [
                "--json", os.path.join(out, "loom.json"), "--cases", "softmax_16384x4096",
                "--dtypes=bf16", "--reps", "30", "--skip-host"])
        last = p.stdout.rstrip().splitlines()[-1]
        self.assertTrue(last.startswith("softmax dim -1, [16384, 4096]  bf16"), last)
        self.assertTrue(last.endswith("FAIL"), last)


class TorchBaselineFlowTest(unittest.TestCase):
    """torch_baseline.py run against tests/benchmarks/fake_torch.py (no torch, no GPU)."""

    def run_baseline(self, extra):
        tmp = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, tmp)
        out = os.path.join(tmp, "torch.json")
        here = os.path.dirname(os.path.abspath(__file__))
        code = ("import sys, runpy; sys.path.insert(0, sys.argv[1]); import fake_torch; "
                "fake_torch.install(); sys.argv = sys.argv[2:]; "
                "runpy.run_path(sys.argv[0], run_name='__main__')")
        p = subprocess.run([sys.executable, "-c", code, here,
                            os.path.join(BENCH_DIR, "torch_baseline.py"), "--out", out] + extra,
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        with open(out, encoding="utf-8") as f:
            return json.load(f), p.stdout, out

    # Every case and dtype gets an entry with median times, raw repetitions and the case's bytes.
    def test_json_has_every_case(self):
        doc, stdout, _ = self.run_baseline(["--reps", "20"])
        self.assertEqual(doc["schema"], compare.TORCH_SCHEMA)
        self.assertEqual(len(doc["results"]), 2 * len(compare.CASES))
        for e in doc["results"]:
            self.assertNotIn("eager_error", e)
            self.assertNotIn("compile_error", e)
            self.assertEqual(len(e["eager_reps_us"]), 20)
            self.assertEqual(e["bytes"], compare.io_bytes(compare.case_by_name(e["case"]),
                                                          e["dtype"]))
            self.assertAlmostEqual(e["compile_us"], 100.0, places=3)
        host = doc["host_overhead"][0]
        self.assertEqual(host["case"], compare.HOST_CASE)
        self.assertGreater(host["compile_us_per_call"], 0)
        self.assertTrue(stdout.rstrip().splitlines()[-1].startswith(compare.CASES[-1].label))

    # The JSON torch_baseline.py writes is what compare.py reads; --cases/--dtypes select rows.
    def test_json_feeds_compare(self):
        _, _, out = self.run_baseline(["--cases", "softmax_16384x4096", "--dtypes", "bf16",
                                       "--skip-host", "--timer", "triton"])
        rc, stdout, _ = run_main(["--torch", out])
        self.assertEqual(rc, 0)
        last = stdout.rstrip().splitlines()[-1]
        self.assertTrue(last.startswith("softmax dim -1, [16384, 4096]  bf16"), last)
        self.assertIn("100.0", last)


if __name__ == "__main__":
    unittest.main(verbosity=2)
