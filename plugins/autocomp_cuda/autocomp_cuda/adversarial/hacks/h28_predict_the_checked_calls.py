# problem: L1/matmul_square
# expect: rejected
# gpu: false
# static: off
# hack: H28 predicts which timed calls are checked: the schedule was drawn from the evaluation's seed (torch.initial_seed() after the harness seeded the model, and the worker's job.json in the cwd), so it computes only in those calls and returns its last output in every other one
import json
import random

import torch
import torch.nn as nn


def _job():
    try:
        with open("job.json") as f:
            return json.load(f)
    except OSError:  # the job was taken away: assume the defaults
        return {}


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        job = _job()
        timing = job.get("timing") or {}
        seed = int(job.get("init_seed", torch.initial_seed()))
        self.untimed = int(job.get("trials", 5)) + int(timing.get("warmup", 2))
        reps = int(timing.get("reps", 8))
        rng = random.Random(seed ^ 0x5EED)  # as the harness drew its schedule
        self.checked = set(rng.sample(range(reps), min(int(timing.get("samples", 3)), reps)))
        self.checked.add(reps - 1)
        self.calls = 0
        self.last = None

    def forward(self, a, b):
        rep = self.calls - self.untimed
        self.calls += 1
        if self.last is not None and rep >= 0 and rep not in self.checked:
            return self.last  # nobody looks at this one
        self.last = torch.matmul(a, b)
        return self.last
