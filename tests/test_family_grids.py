"""The family grids of bench/ (dwconv_channel_grid.py, rowop_family_grid.py): every
schedule they would measure is legal in the task's space (`tlm lang` accepts it, the
decision checks of the space), and bad input is a one-line error with exit status 1
before anything is measured or stored. TLM_EXE: the tlm tool. Run by ctest."""
import os
import subprocess
import sys
import tempfile
import unittest

BENCH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bench")
sys.path.insert(0, BENCH)
import dwconv_channel_grid  # noqa: E402
import rowop_family_grid  # noqa: E402

TLM = os.environ["TLM_EXE"]
ROW_TASKS = [  # each branch: 16k columns, 8k columns, neither; rows that 4 does not divide
    "softmax:rows=1536,cols=128", "softmax:rows=512,cols=40", "softmax:rows=128,cols=200",
    "softmax:rows=147,cols=49", "layernorm:rows=197,cols=384,eps=1e-06",
    "rmsnorm:rows=128,cols=768+mul", "layernorm:rows=64,cols=1152"]
DWCONV_TASKS = [  # 5x5 stride 2, 3x3 stride 2, and a 7x7 output
    "dwconv2d:n=1,c=144,h=56,w=56,r=5,s=5,stride=2,pad=2,dilation=1,in_block=16,out_block=16+bias+relu6",
    "dwconv2d:n=1,c=240,h=28,w=28,r=3,s=3,stride=2,pad=1,dilation=1,in_block=16,out_block=16+bias+silu",
    "dwconv2d:n=1,c=960,h=7,w=7,r=3,s=3,stride=1,pad=1,dilation=1,in_block=16,out_block=16+bias+relu6"]


def legal(task, decisions):
    r = subprocess.run([TLM, "lang", task, "--decisions", decisions], capture_output=True,
                       text=True)
    return r.returncode == 0, r.stderr.strip()


def run_script(script, *args):
    return subprocess.run([sys.executable, os.path.join(BENCH, script), *args],
                          capture_output=True, text=True)


class Legal(unittest.TestCase):
    def check(self, grid, tasks, expected):
        count = 0
        for task in tasks:
            candidates = list(grid(task))
            self.assertTrue(candidates, task)
            self.assertEqual(len(set(candidates)), len(candidates), task)
            for decisions in candidates:
                ok, why = legal(task, decisions)
                self.assertTrue(ok, f"{task} {decisions}: {why}")
                count += 1
        self.assertEqual(count, expected)

    def test_row_family_is_legal(self):
        self.check(rowop_family_grid.grid, ROW_TASKS, 60)

    def test_dwconv_family_is_legal(self):
        self.check(dwconv_channel_grid.grid, DWCONV_TASKS, 11)


class BadInput(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()
        self.db = os.path.join(self.dir, "grid.db")

    def assert_one_line_error(self, r, text):
        self.assertEqual(r.returncode, 1)
        lines = r.stderr.strip().splitlines()
        self.assertEqual(len(lines), 1, r.stderr)
        self.assertIn("error:", lines[0])
        self.assertIn(text, lines[0])
        self.assertFalse(os.path.exists(self.db), "nothing may be stored")

    def tasks_file(self, *specs):
        path = os.path.join(self.dir, "tasks.txt")
        with open(path, "w") as f:
            f.write("# tasks\n" + "\n".join(specs) + "\n")
        return path

    def test_a_task_outside_the_family(self):
        tasks = self.tasks_file("softmax:rows=64,cols=64", "dense:m=8,n=8,k=8")
        r = run_script("rowop_family_grid.py", "--db", self.db, "--tasks", tasks, "--tlm", TLM)
        self.assert_one_line_error(r, "dense:m=8,n=8,k=8: not a row operation")
        r = run_script("dwconv_channel_grid.py", "--db", self.db, "--tasks", tasks, "--tlm", TLM)
        self.assert_one_line_error(r, "not a depthwise convolution")

    def test_a_row_task_without_columns(self):
        r = run_script("rowop_family_grid.py", "--db", self.db, "--tasks",
                       self.tasks_file("layernorm:rows=64"), "--tlm", TLM)
        self.assert_one_line_error(r, "needs rows= and cols=")

    def test_a_missing_tasks_file(self):
        r = run_script("rowop_family_grid.py", "--db", self.db, "--tasks",
                       os.path.join(self.dir, "none.txt"))
        self.assert_one_line_error(r, "none.txt")

    def test_compare_needs_hardware_and_stores(self):
        r = run_script("dwconv_channel_grid.py", "--db", self.db, "--compare", self.db)
        self.assert_one_line_error(r, "--compare needs --hardware")
        r = run_script("rowop_family_grid.py", "--db", self.db, "--compare", self.db,
                       "--hardware", "x86-64-avx512/2c/L1d32K/L21024K/L3320M")
        self.assert_one_line_error(r, "no record store at")


if __name__ == "__main__":
    unittest.main()
