"""Runnable examples: ``python -m examples.NAME [--fast]`` (two_moons, lenet_digits, resnet_digits, demo)."""
