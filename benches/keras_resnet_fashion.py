#!/usr/bin/env python3
"""examples/python/resnet_fashion.py in TensorFlow/Keras on the CPU, for `resnet_fashion
--bench` to compare against: the same program, `--framework tensorflow`.

    python3 benches/keras_resnet_fashion.py --epochs 3 --batch-size 64 --threads 2 --train-rows N
"""
import os
import subprocess
import sys

here = os.path.dirname(os.path.abspath(__file__))
script = os.path.join(here, "..", "examples", "python", "resnet_fashion.py")
sys.exit(subprocess.call([sys.executable, script, "--framework", "tensorflow", *sys.argv[1:]]))
