# Classifies an image with a compiled ResNet-50: python3 classify.py ARTIFACT IMAGE (1x3x224x224 float32).
import sys, numpy as np, tlm
model = tlm.load(sys.argv[1])
image = np.fromfile(sys.argv[2], dtype=np.float32).reshape(model.inputs[0].shape)
scores = model.run({model.inputs[0].name: image})[model.outputs[0].name].ravel()
print("class %d score %.9g" % (scores.argmax(), scores.max()))
