"""The applications: what runs the library (above it, never inside it).

``step`` (one training update), ``training`` (the loop as a library: ``Trainer``, evaluation,
checkpoints and resume), ``cuda_graph`` (the step captured as a CUDA graph), ``runs`` and
``files`` (a run's directory, locks and atomic files), ``checkpoint`` (the safe format),
``corpora`` (what a run reads: ``tricycle_datasets.run_data``, under its old name),
``pretrained`` (Hugging Face model directories where a run directory is expected, and
``--init-from``), ``evaluate`` (HellaSwag and samples), and the command lines ``train``,
``sample`` and ``cli`` (their argument types).
"""
