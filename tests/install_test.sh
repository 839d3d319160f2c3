#!/usr/bin/env bash
# tests/install_test.sh BUILD SOURCE: installs the build into a fresh prefix and uses it as
# a user would, from a folder with no checkout around: the installed tool compiles
# ResNet-50 with its installed shipped model, the README's C example (linked shared and
# static through pkg-config) and Python example classify an image, and both print exactly
# what `tlm run --output` wrote; then the Python package's tests (tests/test_python.py).
set -euo pipefail
build=$(cd "$1" && pwd)
source=$(cd "$2" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix
cmake --install "$build" --prefix "$prefix" > /dev/null
cd "$work"
python=/usr/bin/python3

"$prefix/bin/tlm" compile resnet50 -o resnet50 > compile.log
grep -q "schedules from tlm: " compile.log || { cat compile.log; echo "installed tool did not use the shipped model" >&2; exit 1; }
$python -c "import numpy as np; np.random.default_rng(7).standard_normal((1, 3, 224, 224)).astype(np.float32).tofile('image.f32')"
"$prefix/bin/tlm" run resnet50 --input image.f32 --output expected.npy > /dev/null
expected=$($python -c "import numpy as np; s = np.load('expected.npy').ravel(); print('class %d score %.9g' % (s.argmax(), s.max()))")

pc=$(find "$prefix" -name tlm_runtime.pc)
export PKG_CONFIG_PATH=$(dirname "$pc")
libdir=$(pkg-config --variable=libdir tlm_runtime)
cc -Wall -Wextra -Werror "$source/examples/classify.c" $(pkg-config --cflags --libs tlm_runtime) \
  -Wl,-rpath,"$libdir" -o classify_shared
cc -Wall -Wextra -Werror "$source/examples/classify.c" $(pkg-config --cflags tlm_runtime) \
  "$libdir/libtlm_runtime.a" $(pkg-config --static --libs-only-l tlm_runtime | sed 's/-ltlm_runtime//') \
  -o classify_static
if ldd classify_static | grep -q tlm_runtime; then echo "classify_static links libtlm_runtime.so" >&2; exit 1; fi
for exe in classify_shared classify_static; do
  got=$(./$exe resnet50 image.f32)
  [ "$got" = "$expected" ] || { echo "$exe printed '$got', tlm run gave '$expected'" >&2; exit 1; }
done

export PYTHONPATH=$(dirname "$(dirname "$(find "$prefix" -path '*/tlm/__init__.py')")")
got=$($python "$source/examples/classify.py" resnet50 image.f32)
[ "$got" = "$expected" ] || { echo "classify.py printed '$got', tlm run gave '$expected'" >&2; exit 1; }
echo "C (shared, static) and Python examples: $expected"

TLM_TEST_RESNET50=resnet50 TLM_TEST_IMAGE=image.f32 TLM_TEST_EXPECTED=expected.npy \
  TLM_TEST_TOOL="$prefix/bin/tlm" $python "$source/tests/test_python.py"
