"""bench/trials_ceiling.py: the projection to the store's fastest schedules and the peak
bound, computed from a small acceptance run made up here (two models, a record store, plans
and reports), against the numbers worked out by hand; bad input is a one-line error with
exit status 1. Run by ctest."""
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import unittest

BENCH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bench")
sys.path.insert(0, BENCH)
import trials_ceiling  # noqa: E402

HW = "x86-64-avx512/2c/test"


def write(path, value):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        json.dump(value, f)


def make_store(path, records):
    db = sqlite3.connect(path)
    db.execute("create table records (hardware, task_spec, decisions, status, median_ms)")
    for spec, decisions, ms, status in records:
        db.execute("insert into records values (?,?,?,?,?)", (HW, spec, decisions, status, ms))
    db.commit()


def make_run(root):
    """conv: the plan's schedule 2.0 ms, the store's fastest 1.0 ms, used twice; dense: the
    plan's is the fastest, 4.0 ms. cnn 20 ms in the model against its kernels' 8 ms. The
    run's own store timed the plan's conv at 1.5 ms."""
    make_store(os.path.join(root, "r.db"), [
        ("conv", "[1,2]", 2.0, "ok"), ("conv", "[3,4]", 1.0, "ok"), ("dense", "[5]", 4.0, "ok"),
        ("dense", "[6]", 9.0, "ok"), ("dense", "[7]", 0.1, "error")])
    make_store(os.path.join(root, "own.db"), [("conv", "[1,2]", 1.5, "ok")])
    for name, batch in [("cnn", 1), ("cnn_b8", 8)]:
        write(os.path.join(root, "art", name, "plan.json"), {
            "hardware": HW, "inputs": [0], "tensors": [{"shape": [batch, 3, 8, 8]}],
            "tasks": [{"spec": "conv", "decisions": [1, 2], "count": 2},
                      {"spec": "dense", "decisions": [5], "count": 1}]})
    write(os.path.join(root, "art", "cnn", "report.json"), {
        "peak_gflops": 100.0, "tasks": [{"gflop": 0.2, "steps": 2}, {"gflop": 0.1, "steps": 1}]})
    runs = [{"model": m + ".onnx", "compiled": {"median_ms": 20.0}, "fastest_peer": "ort",
             "peers": {"ort": {"median_ms": 24.0}}} for m in ("cnn", "cnn_b8")]
    write(os.path.join(root, "run.json"), runs)


class Ceiling(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.root = tempfile.mkdtemp()
        make_run(cls.root)
        cls.db = sqlite3.connect(os.path.join(cls.root, "r.db"))

    def run_script(self, *args):
        return subprocess.run([sys.executable, os.path.join(BENCH, "trials_ceiling.py"),
                               "--db", os.path.join(self.root, "r.db"), *args],
                              capture_output=True, text=True)

    def test_projection_and_bound_by_hand(self):
        entry = json.load(open(os.path.join(self.root, "run.json")))[0]
        folder = os.path.join(self.root, "art", "cnn")
        report = trials_ceiling.report_of(folder)
        row = trials_ceiling.model_row(self.db, None, entry, folder, report, 100.0)
        self.assertEqual(row["batch"], 1)
        self.assertAlmostEqual(row["kernels_ms"], 2 * 2.0 + 4.0)
        self.assertAlmostEqual(row["fastest_ms"], 2 * 1.0 + 4.0)
        self.assertAlmostEqual(row["projected_ms"], 20.0 * 6.0 / 8.0)
        self.assertAlmostEqual(row["projected_speed"], 24.0 / 15.0)
        self.assertAlmostEqual(row["peak_ms"], 5.0)  # 0.5 GFLOP at 100 GFLOP/s
        self.assertAlmostEqual(row["peak_speed"], 24.0 / 5.0)
        own = sqlite3.connect(os.path.join(self.root, "own.db"))
        row = trials_ceiling.model_row(self.db, own, entry, folder, report, 100.0)
        self.assertAlmostEqual(row["kernels_ms"], 2 * 1.5 + 4.0)  # the run's own timing
        self.assertAlmostEqual(row["fastest_ms"], 2 * 1.0 + 4.0)
        self.assertAlmostEqual(row["projected_ms"], 20.0 * 6.0 / 7.0)

    def test_peak_is_the_highest_a_report_measured(self):
        reports = [{"peak_gflops": 100.0}, None, {"peak_gflops": 60.0}, {}]
        self.assertEqual(trials_ceiling.machine_peak(reports), 100.0)
        self.assertIsNone(trials_ceiling.machine_peak([None]))

    def test_needed_speed_keeps_near_peak_models_at_their_bound(self):
        rows = [{"model": "t", "tlm_ms": 10.0, "peak_ms": 9.0, "speed": 1.05, "peak_speed": 1.1},
                {"model": "c", "tlm_ms": 10.0, "peak_ms": 5.0, "speed": 1.0, "peak_speed": 2.0}]
        need, near = trials_ceiling.needed_elsewhere(rows, 1.2, "peak_speed")
        self.assertEqual([r["model"] for r in near], ["t"])
        self.assertAlmostEqual(need, 1.2 ** 2 / 1.1)
        need, _ = trials_ceiling.needed_elsewhere(rows, 1.2, "speed")
        self.assertAlmostEqual(need, 1.2 ** 2 / 1.05)
        rows[1]["peak_ms"] = 9.0  # both near: nothing left to ask of the others
        self.assertIsNone(trials_ceiling.needed_elsewhere(rows, 1.2, "speed")[0])

    def test_table_keeps_batch_one_unless_asked(self):
        args = ["--json", os.path.join(self.root, "run.json"),
                "--artifacts", os.path.join(self.root, "art")]
        r = self.run_script(*args)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("cnn ", r.stdout)
        self.assertNotIn("cnn_b8", r.stdout)
        self.assertIn("fastest known 1.600x", r.stdout)
        r = self.run_script(*args, "--models", "cnn_b8")
        self.assertIn("cnn_b8", r.stdout)

    def test_bad_input_is_one_line(self):
        for args in (["--json", os.path.join(self.root, "absent.json"), "--artifacts", "x"],
                     ["--json", os.path.join(self.root, "run.json"), "--artifacts",
                      os.path.join(self.root, "absent")],
                     ["--json", os.path.join(self.root, "r.db"), "--artifacts", "x"]):
            r = self.run_script(*args)
            self.assertEqual(r.returncode, 1, args)
            self.assertTrue(r.stderr.startswith("trials_ceiling: "), r.stderr)
            self.assertEqual(r.stderr.count("\n"), 1, r.stderr)


if __name__ == "__main__":
    unittest.main()
