"""A signal to a pretraining run: SIGTERM or Ctrl-C asks the loop to stop at the next step boundary
and save a checkpoint that resumes (`StopRequest`, which the loop polls); a second one stops at once.
"""
import logging
import signal
import time


log = logging.getLogger(__name__)


class StopRequest:
    """SIGTERM or Ctrl-C asks training to stop at the next step boundary, save a checkpoint and exit
    cleanly; a second signal stops at once (atomic saves leave no half-written file behind).

    Repeats within `grace_s` count as the first: paddle.distributed.launch passes one SIGTERM on
    to each rank up to three times, 0.2 s apart.
    """

    def __init__(self, grace_s=2.0):
        self.name, self.at, self.grace_s = None, None, grace_s

    def install(self):
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, self._handle)
        return self

    def _handle(self, signum, frame):
        now = time.monotonic()
        if self.name is None:
            self.name, self.at = signal.Signals(signum).name, now
            log.warning('%s: stopping after this step to save a checkpoint (send it again to stop at once)',
                        self.name)
        elif now - self.at > self.grace_s:
            raise KeyboardInterrupt
