"""Code that runs inside the child processes (reference, build and candidate workers).

These modules import torch; the parent process imports only ``compare`` from here.
"""
