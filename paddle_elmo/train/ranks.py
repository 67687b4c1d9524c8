"""The processes of a pretraining run: one, or one per device under paddle.distributed.launch.
`setup_device` places this process and joins the group -> (rank, world size); what the ranks agree
on goes through `mean_over_ranks` (the losses, the votes to stop) and `union_over_ranks` (the rows
of a table that a sparse gradient covers).
"""
import numpy as np

import paddle
import paddle.distributed as dist

from paddle_elmo.runtime import set_device, use_device


def setup_device(device, cpu_threads=None):
    world_size = dist.get_world_size()
    if device.startswith('gpu'):  # 'gpu' or 'gpu:N'; under a launch, each rank its own
        set_device(f'gpu:{dist.ParallelEnv().device_id}' if world_size > 1 else device)
    else:
        use_device('cpu', cpu_threads=cpu_threads)
    if world_size > 1:
        dist.init_parallel_env()
    return dist.get_rank(), world_size


def union_over_ranks(ids):
    """Sorted union of every rank's row ids of a table (the rows each rank's gradient covers)."""
    gathered = []
    dist.all_gather_object(gathered, ids)
    return np.unique(np.concatenate(gathered))


def mean_over_ranks(values, world_size):
    t = paddle.to_tensor(np.asarray(values, dtype=np.float32))
    if world_size > 1:
        dist.all_reduce(t)
        t = t / world_size
    return t.numpy().tolist()
