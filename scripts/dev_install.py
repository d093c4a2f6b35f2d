"""Register the source tree's python/autofuse in a virtual environment, in editable form, without building anything.

Why not `pip install -e .`: scikit-build-core's editable mode builds the extension with its own CMake run and installs
an import hook that takes precedence over PYTHONPATH; several checkouts (git worktrees) share one .venv here, and each
must import its own python/ (the Makefile sets PYTHONPATH). So this writes what an editable install amounts to:
  site-packages/autofuse-editable.pth      the checkout's python/ directory, appended to sys.path
  site-packages/autofuse-VERSION.dist-info METADATA, entry_points.txt (torch_dynamo_backends), RECORD, direct_url.json
pip sees it as an editable install of "autofuse" (`pip show`, `pip uninstall` work). Metadata comes from
pyproject.toml. Usage: python scripts/dev_install.py [--source-root DIR] [--python-dir DIR]; run with the venv's python.
"""

import argparse
import base64
import hashlib
import json
import pathlib
import shutil
import sysconfig
import tomllib


def _record_line(path: pathlib.Path, site: pathlib.Path) -> str:
    data = path.read_bytes()
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{path.relative_to(site).as_posix()},sha256={digest},{len(data)}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--source-root", default=str(pathlib.Path(__file__).resolve().parent.parent),
                    help="checkout whose pyproject.toml gives the metadata (default: this script's)")
    ap.add_argument("--python-dir", default=None,
                    help="directory put on sys.path by the .pth file (default: SOURCE_ROOT/python)")
    args = ap.parse_args()
    root = pathlib.Path(args.source_root).resolve()
    python_dir = pathlib.Path(args.python_dir).resolve() if args.python_dir else root / "python"
    project = tomllib.loads((root / "pyproject.toml").read_text())["project"]
    name, version = project["name"], project["version"]
    site = pathlib.Path(sysconfig.get_paths()["purelib"])

    for old in site.glob(f"{name}-*.dist-info"):
        shutil.rmtree(old)
    dist = site / f"{name}-{version}.dist-info"
    dist.mkdir()
    meta = [f"Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}", f"Summary: {project.get('description', '')}"]
    meta += [f"Requires-Dist: {d}" for d in project.get("dependencies", [])]
    (dist / "METADATA").write_text("\n".join(meta) + "\n")
    eps = []
    for group, entries in project.get("entry-points", {}).items():
        eps.append(f"[{group}]")
        eps += [f"{k} = {v}" for k, v in entries.items()]
        eps.append("")
    (dist / "entry_points.txt").write_text("\n".join(eps))
    (dist / "INSTALLER").write_text("autofuse-dev-install\n")
    (dist / "direct_url.json").write_text(json.dumps({"url": python_dir.parent.as_uri(), "dir_info": {"editable": True}}))
    pth = site / f"{name}-editable.pth"
    pth.write_text(str(python_dir) + "\n")

    files = [pth] + sorted(p for p in dist.iterdir())
    record = [_record_line(p, site) for p in files] + [f"{(dist / 'RECORD').relative_to(site).as_posix()},,"]
    (dist / "RECORD").write_text("\n".join(record) + "\n")
    print(f"dev-install: {name} {version} -> {python_dir} (editable, in {site})")


if __name__ == "__main__":
    main()
