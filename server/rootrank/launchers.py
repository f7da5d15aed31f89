"""The launchers whose command lines rootrank reads, as one regex alternation every reader of
a launch line shares (:data:`rootrank.scan._COMMAND` and ``_RUN_COMMAND``,
:data:`rootrank.runs._LAUNCH`, :data:`rootrank.entry.commands._LAUNCHER_WORD`): a launcher
added here is recognised in a printed command, splits two jobs launched differently, and keeps
an entry's ``python train.py`` after it. Each is named as its users type it (the console
script, or ``python -m`` of its module):

- ``torchrun`` / ``python -m torch.distributed.run`` (``.launch``, the older module):
  https://docs.pytorch.org/docs/stable/elastic/run.html
- ``accelerate launch``: https://huggingface.co/docs/accelerate/package_reference/cli
- ``deepspeed``: https://www.deepspeed.ai/getting-started/#launching-deepspeed-training
- ``mpirun`` / ``mpiexec`` (Open MPI, MPICH), ``srun`` (SLURM), ``horovodrun`` (Horovod)
- ``composer`` (MosaicML): https://github.com/mosaicml/composer/blob/dev/composer/cli/launcher.py
"""

from __future__ import annotations

#: Launchers that start the job's processes (regex source, no groups, no anchors); words
#: inside one are joined by ``\s+`` (a log may pad them).
MULTI_PROCESS = (
    r"torchrun|python[\d.]*\s+-m\s+torch\.distributed\.(?:run|launch)|accelerate\s+launch"
    r"|deepspeed|mpirun|mpiexec|srun|horovodrun|composer"
)
#: Any launch of a training script: a multi-process launcher, or the interpreter itself
#: (``python3 train.py``). The interpreter comes last, so ``python -m torch.distributed.run``
#: is read as the launcher it is.
ANY = MULTI_PROCESS + r"|python[\d.]*"

#: ``python -c CODE``: Python's own flags before ``-c`` (``-u``, ``-X faulthandler``, ``-W
#: ignore``), an optional path before the interpreter; a script's own ``-c cfg.yaml`` after
#: ``train.py`` is no match (a word that is no flag ends the search).
PYTHON_CODE = r"(?:\S*/)?python[\d.]*(?:\s+-(?:[XW]\s*\S+|[A-Za-z]+))*?\s+-c\s"

#: Frameworks' own command-line programs that start a whole training job (regex source, no
#: groups): each runs its launcher itself, so a printed one is the command a rerun types.
#:
#: - ``nemo llm finetune|pretrain|...`` (NeMo 2.0's CLI: https://docs.nvidia.com/nemo-framework/user-guide/latest/nemo-2.0/quickstart.html)
#: - ``swift sft|pt|rlhf|...`` and ``megatron sft|pt|...`` (ms-swift: swift/cli/main.py)
#: - ``tune run`` (torchtune: https://pytorch.org/torchtune/stable/tune_cli.html)
#: - ``xtuner train`` (XTuner), ``oumi train|distributed`` (Oumi)
FRAMEWORK_CLI = (
    r"nemo\s+llm\s+[a-z][\w-]*|(?:swift|megatron)\s+(?:sft|pt|rlhf|infer|export|deploy|eval|app)\b"
    r"|tune\s+run|xtuner\s+train|oumi\s+(?:train|distributed)"
)
