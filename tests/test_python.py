"""The Python package `tlm` as installed (run by tests/install_test.sh, which sets
PYTHONPATH to the installed tree and these variables): TLM_TEST_RESNET50 an artifact,
TLM_TEST_IMAGE its input (raw float32), TLM_TEST_EXPECTED what `tlm run --output` wrote
for it, TLM_TEST_TOOL the installed tool; TLM_ONNX_FIXTURES (optional) the ONNX fixtures.
"""
import os
import subprocess
import sys
import tempfile
import threading
import unittest

import numpy as np

import tlm

ENV = os.environ


class Installed(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.resnet = tlm.load(ENV["TLM_TEST_RESNET50"])
        cls.image = np.fromfile(ENV["TLM_TEST_IMAGE"], dtype=np.float32).reshape(1, 3, 224, 224)
        cls.expected = np.load(ENV["TLM_TEST_EXPECTED"])
        cls.scratch = tempfile.mkdtemp()

    def test_run_gives_exactly_the_tools_output(self):
        name = self.resnet.inputs[0].name
        got = self.resnet.run({name: self.image})[self.resnet.outputs[0].name]
        self.assertEqual(got.dtype, np.float32)
        self.assertTrue(np.array_equal(got, self.expected))
        # One array for a one-input model, leading 1s left out, any float type, any layout.
        got = self.resnet.run(self.image[0])[self.resnet.outputs[0].name]
        self.assertTrue(np.array_equal(got, self.expected))
        fortran = np.asfortranarray(self.image.astype(np.float64))
        got = self.resnet.run({name: fortran})[self.resnet.outputs[0].name]
        self.assertTrue(np.array_equal(got, self.expected))

    def test_inputs_and_outputs_say_names_types_shapes(self):
        self.assertEqual(len(self.resnet.inputs), 1)
        self.assertEqual(self.resnet.inputs[0].dtype, "float32")
        self.assertEqual(self.resnet.inputs[0].shape, (1, 3, 224, 224))
        self.assertEqual(self.resnet.outputs[0].shape, self.expected.shape)
        self.assertIn(self.resnet.inputs[0].name, repr(self.resnet.inputs[0]))

    def expect_error(self, fragment, call, *args):
        with self.assertRaises(tlm.Error) as caught:
            call(*args)
        self.assertIn(fragment, str(caught.exception))
        self.assertNotIn("\n", str(caught.exception))

    def test_errors_are_tlm_errors_with_one_line(self):
        self.assertTrue(issubclass(tlm.Error, RuntimeError))
        name = self.resnet.inputs[0].name
        self.expect_error("no compiled model", tlm.load, os.path.join(self.scratch, "absent"))
        self.expect_error("has shape (1, 3, 224, 223)", self.resnet.run,
                          {name: np.zeros((1, 3, 224, 223), np.float32)})
        self.expect_error("is missing", self.resnet.run, {})
        self.expect_error("has no input 'nope'", self.resnet.run,
                          {name: self.image, "nope": self.image})
        self.expect_error("is not an array of numbers", self.resnet.run, {name: "an image"})
        self.expect_error("unknown model 'nosuchnet'", tlm.compile, "nosuchnet",
                          os.path.join(self.scratch, "x"))

    def test_compile_then_run_from_threads(self):
        out = os.path.join(self.scratch, "bert")
        self.assertEqual(tlm.compile("bert-base", out, extra_args=["--layers", "1", "--seq", "16"]),
                         out)
        model = tlm.load(out)
        rng = np.random.default_rng(3)
        feeds = [rng.standard_normal(model.inputs[0].shape).astype(np.float32) for _ in range(8)]
        serial = [model.run(f)[model.outputs[0].name] for f in feeds]
        results = [None] * len(feeds)

        def work(k):
            results[k] = model.run(feeds[k])[model.outputs[0].name]

        threads = [threading.Thread(target=work, args=(k,)) for k in range(len(feeds))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for s, r in zip(serial, results):
            self.assertTrue(np.array_equal(s, r))

    @unittest.skipUnless(ENV.get("TLM_ONNX_FIXTURES"), "TLM_ONNX_FIXTURES is not set")
    def test_integer_inputs_from_an_onnx_file(self):
        fixtures = ENV["TLM_ONNX_FIXTURES"]
        out = tlm.compile(os.path.join(fixtures, "bert.onnx"), os.path.join(self.scratch, "onnx"),
                          strategy="reference")
        model = tlm.load(out)
        self.assertEqual([i.dtype for i in model.inputs], ["int64", "int64"])
        feeds = {i.name: np.load(os.path.join(fixtures, "bert.in.%s.npy" % i.name))
                 for i in model.inputs}
        got = model.run(feeds)["output"]
        tool_out = os.path.join(self.scratch, "onnx_out.npy")
        subprocess.run([ENV["TLM_TEST_TOOL"], "run", out, "--output", tool_out] +
                       ["--input=%s=%s" % (i.name, os.path.join(fixtures, "bert.in.%s.npy" % i.name))
                        for i in model.inputs], check=True, stdout=subprocess.DEVNULL)
        self.assertTrue(np.array_equal(got, np.load(tool_out)))
        reference = np.load(os.path.join(fixtures, "bert.out.npy"))
        self.assertLess(np.abs(got - reference).max() / np.abs(reference).max(), 1e-4)
        self.expect_error("holds int64, the array holds float32", model.run,
                          {k: v.astype(np.float32) for k, v in feeds.items()})


if __name__ == "__main__":
    ENV.pop("TLM_EXE", None)  # tlm.compile must find the tool installed beside the package
    unittest.main(argv=[sys.argv[0], "-v"])
