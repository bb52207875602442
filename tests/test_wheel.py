"""The built wheel works outside the clone, as `pipx install` or `uv tool install` put it.

The wheel is built offline from a copy of the sources (``--no-build-isolation``, with the test
tools' setuptools) and installed with ``--no-deps`` into a fresh virtual environment that finds
the dependencies already installed here through a ``.pth`` file, so the test needs no network
and no second copy of lancedb. From that environment: ``memd --version``, ``memd serve``,
``memd install --hooks`` (the hooks must run that environment's interpreter and hook file), and
the installed hook command itself, which must inject a memory added through the daemon.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest
from daemon_process import DaemonProcess, daemon_env, remove_socket_dir, short_socket_path

import memd

ROOT = Path(__file__).resolve().parents[1]
PIP = [sys.executable, "-m", "pip", "--quiet", "--disable-pip-version-check"]
pytestmark = pytest.mark.slow


def build_wheel(tmp: Path) -> Path:
    src = tmp / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, src / name)
    shutil.copytree(ROOT / "memd", src / "memd", ignore=shutil.ignore_patterns("__pycache__"))
    out = tmp / "dist"
    run = subprocess.run(
        [
            *PIP,
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "--no-index",
            "-w",
            str(out),
            str(src),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr
    assert "deprecat" not in run.stderr.lower(), run.stderr
    (wheel,) = out.glob("memd-*.whl")
    return wheel


def fresh_venv(tmp: Path, wheel: Path) -> Path:
    venv = tmp / "tool-venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    # The dependencies installed here, without memd itself (its strict editable install is a
    # .pth in that directory, which a directory added this way does not read).
    Path(purelib, "deps-from-the-test-venv.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    run = subprocess.run(
        [*PIP, "--python", str(python), "install", "--no-deps", "--no-index", str(wheel)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr
    return venv


def test_the_wheel_installs_as_a_tool_and_its_hook_works(tmp_path: Path) -> None:
    wheel = build_wheel(tmp_path)
    names = zipfile.ZipFile(wheel).namelist()
    for needed in ("memd/hookrun.py", "memd/ui/templates/base.html", "memd/ui/static/ui.js"):
        assert needed in names, needed
    assert any(n.startswith("memd/data/") and n.endswith(".tsv") for n in names)
    venv = fresh_venv(tmp_path, wheel)
    tool = venv / "bin" / "memd"

    version = subprocess.run([str(tool), "--version"], capture_output=True, text=True)
    assert version.returncode == 0, version.stderr
    assert version.stdout.strip() == f"memd, version {memd.__version__}"

    sock = short_socket_path()
    env = daemon_env(tmp_path / "d", sock, CLAUDE_CONFIG_DIR=str(tmp_path / "claude"))
    daemon = DaemonProcess(env, tmp_path / "serve.log", program=str(tool))
    try:
        daemon.start()
        where = subprocess.run(
            [str(venv / "bin" / "python"), "-c", "import memd; print(memd.__file__)"],
            capture_output=True,
            text=True,
            env=env,
            cwd=str(tmp_path),  # not the clone, whose memd/ a script's '' path entry would find
        )
        assert where.stdout.startswith(str(venv)), where.stdout  # the wheel's memd, not the clone's
        installed = daemon.memd("install", "--hooks")
        assert installed.returncode == 0, installed.stderr
        settings = json.loads((tmp_path / "claude" / "settings.json").read_text())
        command = settings["hooks"]["UserPromptSubmit"][0]["hooks"][0]["command"]
        assert command.startswith(f"{venv}/bin/python -I -S {venv}/lib/"), command
        assert "/site-packages/memd/hookrun.py user-prompt-submit --socket " in command

        repo = tmp_path / "shop"
        (repo / ".git").mkdir(parents=True)
        added = daemon.memd("add", "Deploys go out with the blue-green script", cwd=str(repo))
        assert added.returncode == 0, added.stderr
        payload = {"session_id": "s1", "cwd": str(repo), "prompt": "how do we deploy?"}
        hook = subprocess.run(
            command,
            shell=True,
            input=json.dumps(payload),
            capture_output=True,
            text=True,
            env={"PATH": os.environ["PATH"]},  # the hook needs nothing from the environment
            timeout=30,
        )
        assert hook.returncode == 0, hook.stderr
        assert "blue-green script" in hook.stdout
    finally:
        daemon.stop()
        remove_socket_dir(sock)


def make_dry_run(target: str, tmp: Path) -> str:
    """The commands `make TARGET` would run to set up a virtual environment that does not exist."""
    run = subprocess.run(
        ["make", "-n", target, f"VENV={tmp / 'venv'}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 0, run.stderr
    return run.stdout


def test_make_serve_installs_the_daemon_only_and_make_test_adds_the_tools(tmp_path: Path) -> None:
    serve = make_dry_run("serve", tmp_path)
    installs = [line for line in serve.splitlines() if " install " in line]
    assert installs and all("--quiet" in line for line in installs), serve
    assert any("install -e . " in line for line in installs), serve
    assert "[test]" not in serve and "/bin/pytest" not in serve
    test = make_dry_run("test", tmp_path)
    assert "install -e '.[test]'" in test and "/bin/pytest" in test
