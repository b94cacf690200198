"""Upload a folder to act's artifact server with its container API: create the container,
PUT each file, then set the artifact's size. Standard library only; runs as a step."""

from __future__ import annotations

import json
import os
import sys
import urllib.parse
import urllib.request
from pathlib import Path

API = "api-version=6.0-preview"


def call(method: str, url: str, data: bytes, headers: dict[str, str]) -> bytes:
    token = os.environ.get("ACTIONS_RUNTIME_TOKEN", "")
    request = urllib.request.Request(url, data=data, method=method)
    request.add_header("Authorization", f"Bearer {token}")
    for key, value in headers.items():
        request.add_header(key, value)
    with urllib.request.urlopen(request, timeout=30) as response:
        return bytes(response.read())


def main() -> int:
    name, folder = os.environ["INPUT_NAME"], Path(os.environ["INPUT_PATH"])
    base = os.environ.get("ACTIONS_RUNTIME_URL", "")
    if not base:
        print("no ACTIONS_RUNTIME_URL: run act with --artifact-server-path", file=sys.stderr)
        return 1
    files = sorted(path for path in folder.rglob("*") if path.is_file()) if folder.is_dir() else []
    if not files:
        print(f"no files in {folder}: nothing uploaded")
        return 0
    run_url = (
        f"{base.rstrip('/')}/_apis/pipelines/workflows/{os.environ['GITHUB_RUN_ID']}/artifacts"
    )
    body = {"type": "actions_storage", "name": name}
    if os.environ.get("INPUT_RETENTION"):
        body["retentionDays"] = os.environ["INPUT_RETENTION"]
    json_type = {"Content-Type": "application/json"}
    created = json.loads(call("POST", f"{run_url}?{API}", json.dumps(body).encode(), json_type))
    container = created["fileContainerResourceUrl"]
    size = 0
    for path in files:
        data = path.read_bytes()
        item = f"{name}/{path.relative_to(folder).as_posix()}"
        headers = {
            "Content-Type": "application/octet-stream",
            "Content-Range": f"bytes 0-{max(len(data) - 1, 0)}/{len(data)}",
        }
        call("PUT", f"{container}?itemPath={urllib.parse.quote(item)}", data, headers)
        size += len(data)
    finish = json.dumps({"size": size}).encode()
    call("PATCH", f"{run_url}?artifactName={urllib.parse.quote(name)}&{API}", finish, json_type)
    print(f"uploaded {len(files)} file(s) as {name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
