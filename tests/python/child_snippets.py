"""Code shared by the child processes of the cache tests (test_backend_aot_cache.py, test_warm_start.py): run
``compiled`` on ``x`` (a training step when ``train``: the loss sum(y * arange), gradients of every parameter) and
the eager ``model`` for reference (``y_ref``), leaving the outputs (and gradients) in ``result``. The child script
defines ``compiled``, ``model``, ``x``, ``dtype`` and ``train`` before it."""

RUN_STEP = r'''if train:
    y = compiled(x)
    (y * torch.arange(y.shape[-1], dtype=dtype)).sum().backward()
    result = {"y": y.detach(), **{n: p.grad for n, p in model.named_parameters()}}
    y_ref = model(x)
else:
    with torch.no_grad():
        y = compiled(x)
        y_ref = model(x)
    result = {"y": y}
'''
