#!/usr/bin/env python3
"""Runs every guide as one program, as a reader would paste it, and checks what it prints.

For README.md (its quick start) and each guide in Docs/ (not Docs/README.md, which describes the
rules), the Swift code blocks are assembled in order into one package, which depends on this
checkout through .build-guides/packages/DispatchStore (a link to it). The package is built with
warnings as errors and linted with the repository's .swift-format; each executable it declares runs
with a time limit and must exit 0, its test targets run with `swift test`; every output the guide
claims must appear, in order, in what the program printed on standard output. The rules are in
Docs/README.md.

Every guide's package is written to the same folder, .build-guides/packages/Guide: a new folder
would reuse the build plan SwiftPM cached for the previous package (it checks only the folders that
plan knows). A copy is kept in .build-guides/programs/<Guide> to be looked at.

    python3 Docs/guides.py                       every guide
    python3 Docs/guides.py Docs/Recorder.md ...  some guides
    python3 Docs/guides.py --timeout 30          a shorter time limit per run (default 120 seconds)
    python3 Docs/guides.py --self-test           checks that this runner catches what it should

All guides share one build directory (.build-guides/build), so the library is compiled once.

A guide whose manifest depends on the integration package DispatchStoreNATS (Docs/Replication.md)
gets a nats-server with JetStream, started on a free port of 127.0.0.1 for its run and stopped by its
process id after; the program finds its URL in the environment variable NATS_URL. Without nats-server
or nats.c (apt-get install nats-server libnats-dev) such a guide is skipped, with a notice; with the
environment variable DISPATCHSTORE_REQUIRE_NATS set (as .ci/run sets it), that is a failure instead.
"""

import argparse
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCRATCH = ROOT / ".build-guides"
PACKAGES = SCRATCH / "packages"
BUILD = SCRATCH / "build"
PROGRAMS = SCRATCH / "programs"
LOOKALIKES = ROOT / "Docs" / "Lookalikes"
MANIFEST_GUIDE = ROOT / "Docs" / "GettingStarted.md"
DEFAULT_FILE = "Sources/App/main.swift"

FENCE = re.compile(r"^(```+|~~~+)\s*([A-Za-z0-9_+-]*)")
FILE_LINE = re.compile(r"^// ((?:Sources|Tests)/\S+\.swift)\s*$")
OUTPUT_MARKER = "<!-- guide: output -->"
IMPORT = re.compile(r"^\s*(?:@testable\s+|public\s+|internal\s+)?import\s+(\w+)")
LIBRARY_PRODUCTS = {"DispatchStore", "DispatchStoreJournal", "DispatchStoreTesting", "DispatchStoreInspector"}


class GuideError(Exception):
    """A problem with a guide, already phrased for its writer."""


class Claim:
    """A line of output the guide says the program prints."""

    def __init__(self, guide_line, text, file, suffix):
        # The guide's line, the text printed, and the package file the claim is in.
        self.guide_line = guide_line
        self.text = text
        self.file = file
        # A line of an output block matches the end of a printed line (a test runner prefixes its
        # issues with the test's name and location); a `// Prints` claim matches a whole line.
        self.suffix = suffix


class Guide:
    """A guide's blocks, sorted into the files of its package, and its claims."""

    def __init__(self, path):
        self.path = path
        self.relative = path.relative_to(ROOT)
        self.name = "README" if path.name == "README.md" else path.stem
        self.manifest = None  # (text, first guide line)
        self.files = {}  # package-relative path -> [(text, guide line or None)]
        self.claims = []
        self.problems = []
        self.parse()

    def location(self, line):
        return f"{self.relative}:{line}"

    def parse(self):
        lines = self.path.read_text(encoding="utf-8").split("\n")
        current_file = DEFAULT_FILE
        index = 0
        output_next = False
        while index < len(lines):
            line = lines[index]
            if line.strip() == OUTPUT_MARKER:
                output_next = True
                index += 1
                continue
            fence = FENCE.match(line)
            if not fence:
                if line.strip():
                    output_next = False
                index += 1
                continue
            marker, language = fence.group(1), fence.group(2)
            start = index + 1
            end = start
            while end < len(lines) and not lines[end].startswith(marker):
                end += 1
            body = [(lines[number], number + 1) for number in range(start, end)]
            if output_next:
                for text, number in body:
                    if text.strip():
                        self.claims.append(Claim(number, text.rstrip(), current_file, suffix=True))
            elif language == "swift":
                current_file = self.add_block(body, current_file)
            output_next = False
            index = end + 1

    def add_block(self, body, current_file):
        first = body[0][0] if body else ""
        if first.startswith("// swift-tools-version"):
            if self.manifest:
                self.problems.append(f"{self.location(body[0][1])}: a second manifest; a guide has one package")
            self.manifest = ("\n".join(text for text, _ in body) + "\n", body[0][1])
            return current_file
        named = FILE_LINE.match(first)
        if named:
            current_file = named.group(1)
        lines = self.files.setdefault(current_file, [])
        if lines:
            lines.append(("", None))
        for text, number in body:
            lines.append((text, number))
            self.check_claims(text, number, current_file)
        return current_file

    def check_claims(self, text, number, file):
        comment = trailing_comment(text)
        if comment is None:
            return
        claim = re.match(r'//\s*Prints\b\s*(.*)$', comment)
        if claim:
            rest = claim.group(1)
            if not (rest.startswith('"') and rest.count('"') >= 2):
                self.problems.append(
                    f'{self.location(number)}: write a claimed output as // Prints "the line printed"'
                )
                return
            self.claims.append(Claim(number, rest[1 : rest.rindex('"')], file, suffix=False))
        elif re.search(r"\bprint\(", text[: len(text) - len(comment)]):
            self.problems.append(
                f"{self.location(number)}: the comment after print(...) is not checked; to state what it prints, "
                f'write // Prints "the line printed"; to explain, put the comment on the line above'
            )


def trailing_comment(text):
    """The `// ...` comment of a line of Swift, outside string literals, or None."""
    quoted = False
    index = 0
    while index < len(text):
        character = text[index]
        if character == "\\" and quoted:
            index += 2
            continue
        if character == '"':
            quoted = not quoted
        elif not quoted and text.startswith("//", index):
            return text[index:]
        index += 1
    return None


def run(arguments, timeout=None, cwd=None, environment=None):
    started = time.monotonic()
    try:
        result = subprocess.run(
            arguments,
            cwd=cwd,
            env=environment,
            capture_output=True,
            text=True,
            errors="replace",
            timeout=timeout,
        )
        return result.returncode, result.stdout, result.stderr, time.monotonic() - started, False
    except subprocess.TimeoutExpired as expired:
        stdout = expired.stdout.decode(errors="replace") if isinstance(expired.stdout, bytes) else expired.stdout
        stderr = expired.stderr.decode(errors="replace") if isinstance(expired.stderr, bytes) else expired.stderr
        return None, stdout or "", stderr or "", time.monotonic() - started, True


class Package:
    """The package a guide's blocks make, written to .build-guides/packages/Guide."""

    def __init__(self, guide, default_manifest):
        self.guide = guide
        self.directory = PACKAGES / "Guide"
        self.line_maps = {}  # absolute file path -> [guide line or None per line]
        self.default_manifest = default_manifest

    def write(self):
        if self.directory.exists():
            shutil.rmtree(self.directory)
        self.directory.mkdir(parents=True)
        for relative, lines in self.guide.files.items():
            path = self.directory / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("\n".join(text for text, _ in lines) + "\n", encoding="utf-8")
            self.line_maps[str(path)] = [number for _, number in lines]
        manifest = self.guide.manifest[0] if self.guide.manifest else self.default_manifest
        (self.directory / "Package.swift").write_text(manifest, encoding="utf-8")
        if self.guide.manifest:
            self.line_maps[str(self.directory / "Package.swift")] = [
                self.guide.manifest[1] + offset for offset in range(manifest.count("\n"))
            ]
        else:
            self.add_undeclared_targets()

    def describe(self):
        status, stdout, stderr, _, _ = run(["swift", "package", "dump-package", "--package-path", str(self.directory)])
        if status != 0:
            raise GuideError(f"{self.guide.relative}: the manifest does not load:\n{self.mapped(stderr)}")
        return json.loads(stdout)

    def add_undeclared_targets(self):
        """Adds a target for each folder under Sources/ that the default manifest does not declare.

        An executable target when the folder has a main.swift, a library otherwise; each depends on
        the DispatchStore products it imports, and on the stand-ins (Docs/Lookalikes/<Module>) of
        the other modules it imports, which are copied in as targets too. A target the manifest
        declares gets the DispatchStore products it imports and does not depend on yet.
        """
        targets = {target["name"]: target for target in self.describe()["targets"]}
        folders = sorted({Path(relative).parts[1] for relative in self.guide.files if relative.startswith("Sources/")})
        additions = []
        extra_products = []
        stand_ins = set()
        for folder in folders:
            if folder in targets:
                # A target of the default manifest: the DispatchStore products it imports and does
                # not depend on yet (the manifest names `DispatchStore` alone).
                has = json.dumps(targets[folder].get("dependencies", []))
                for module in sorted(self.imports_of(folder) & LIBRARY_PRODUCTS):
                    if f'"{module}"' not in has:
                        extra_products.append((folder, module))
                continue
            imports = self.imports_of(folder)
            dependencies = []
            for module in sorted(imports):
                if module in LIBRARY_PRODUCTS:
                    dependencies.append(f'.product(name: "{module}", package: "DispatchStore")')
                elif (LOOKALIKES / module).is_dir():
                    dependencies.append(f'"{module}"')
                    stand_ins.add(module)
            kind = "executableTarget" if (self.directory / "Sources" / folder / "main.swift").exists() else "target"
            additions.append(f'    .{kind}(name: "{folder}", dependencies: [{", ".join(dependencies)}]),')
        for module in sorted(stand_ins):
            shutil.copytree(LOOKALIKES / module, self.directory / "Sources" / module)
            additions.append(f'    .target(name: "{module}"),')
        if additions:
            with open(self.directory / "Package.swift", "a", encoding="utf-8") as manifest:
                manifest.write(
                    "\n// Added by Docs/guides.py: the guide's other folders, and stand-ins from Docs/Lookalikes.\n"
                    "package.targets += [\n" + "\n".join(additions) + "\n]\n"
                )
        if extra_products:
            with open(self.directory / "Package.swift", "a", encoding="utf-8") as manifest:
                manifest.write("\n// Added by Docs/guides.py: the DispatchStore products the guide imports.\n")
                for folder, module in extra_products:
                    manifest.write(
                        f'package.targets.first {{ $0.name == "{folder}" }}?.dependencies.append(\n'
                        f'    .product(name: "{module}", package: "DispatchStore")\n)\n'
                    )

    def imports_of(self, folder):
        """The modules the guide's files under Sources/<folder> import."""
        imports = set()
        for relative, lines in self.guide.files.items():
            if Path(relative).parts[:2] == ("Sources", folder):
                for text, _ in lines:
                    match = IMPORT.match(text)
                    if match:
                        imports.add(match.group(1))
        return imports

    def check_every_file_is_built(self, description):
        paths = []
        for target in description["targets"]:
            folder = "Tests" if target["type"] == "test" else "Sources"
            paths.append(target.get("path") or f"{folder}/{target['name']}")
        for relative in self.guide.files:
            if not any(relative.startswith(path.rstrip("/") + "/") for path in paths):
                raise GuideError(
                    f"{self.guide.relative}: {relative} belongs to no target of the guide's manifest, so it would "
                    f"not be compiled"
                )

    def mapped(self, text):
        """Compiler output with each location in a generated file followed by the guide's line."""

        def replace(match):
            path, line = match.group(1), int(match.group(2))
            numbers = self.line_maps.get(path)
            if numbers and 0 < line <= len(numbers) and numbers[line - 1]:
                return f"{match.group(0)} [{self.guide.relative}:{numbers[line - 1]}]"
            return match.group(0)

        return re.sub(r"(/[^\s:]+\.swift):(\d+):(\d+):", replace, text)


NATS_PACKAGE = "DispatchStoreNATS"
NATS_SETUP = "apt-get install nats-server libnats-dev"


def needs_nats(guide):
    """Whether the guide's program uses the integration package, and so a NATS server."""
    return bool(guide.manifest) and NATS_PACKAGE in guide.manifest[0]


def nats_server_path():
    """The nats-server executable, or None."""
    found = shutil.which("nats-server")
    if found:
        return found
    for candidate in ("/usr/sbin/nats-server", "/usr/local/bin/nats-server"):
        if os.access(candidate, os.X_OK):
            return candidate
    return None


def nats_missing():
    """What is missing to build and run a guide that uses NATS, or None."""
    missing = []
    if not nats_server_path():
        missing.append("nats-server")
    status, _, _, _, _ = run(["pkg-config", "--exists", "libnats"])
    if status != 0:
        missing.append("nats.c (pkg-config libnats)")
    return " and ".join(missing) if missing else None


class NATSServer:
    """A nats-server with JetStream on a free port of 127.0.0.1, in a directory of its own."""

    def __init__(self):
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.directory = tempfile.mkdtemp(prefix="guide-nats-")
        self.process = subprocess.Popen(
            [nats_server_path(), "-js", "-a", "127.0.0.1", "-p", str(self.port), "-sd", self.directory],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        self.url = f"nats://127.0.0.1:{self.port}"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and self.process.poll() is None:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    return
            except OSError:
                time.sleep(0.05)
        self.stop()
        raise GuideError(f"nats-server did not listen on 127.0.0.1:{self.port} within 60 seconds")

    def stop(self):
        """Stops the server by its process id and removes its directory."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        shutil.rmtree(self.directory, ignore_errors=True)


def matches(claim, line):
    line = line.rstrip()
    return line.endswith(claim.text) if claim.suffix else line == claim.text


def check_claims(guide, claims, output, what):
    """Checks that every claim appears in `output`, in order; returns the problems."""
    lines = output.split("\n")
    position = 0
    problems = []
    for claim in claims:
        found = next((index for index in range(position, len(lines)) if matches(claim, lines[index])), None)
        if found is None:
            since = lines[position:]
            shown = "\n".join(f"    | {line}" for line in since[:40]) or "    | (nothing)"
            if len(since) > 40:
                shown += f"\n    | ... {len(since) - 40} more lines"
            problems.append(
                f"{guide.location(claim.guide_line)}: the guide says {what} prints\n    {claim.text!r}\n"
                f"  but after the previous claim it printed:\n{shown}"
            )
        else:
            position = found + 1
    return problems


def run_guide(guide, default_manifest, timeout, lint):
    """Builds and runs one guide; returns (problems, a summary line)."""
    problems = list(guide.problems)
    if not guide.files:
        if guide.claims or guide.manifest:
            problems.append(f"{guide.relative}: claims or a manifest, but no Swift code to run")
        return problems, "no Swift code"
    if needs_nats(guide):
        missing = nats_missing()
        if missing:
            if os.environ.get("DISPATCHSTORE_REQUIRE_NATS"):
                return problems + [f"{guide.relative}: needs {missing}, which is not installed ({NATS_SETUP})"], ""
            return problems, f"skipped: needs {missing} ({NATS_SETUP})"
    package = Package(guide, default_manifest)
    package.write()
    description = package.describe()
    package.check_every_file_is_built(description)
    copy = PROGRAMS / guide.name
    if copy.exists():
        shutil.rmtree(copy)
    shutil.copytree(package.directory, copy, ignore=shutil.ignore_patterns(".build", "Package.resolved"))

    status, stdout, stderr, elapsed, _ = run(
        [
            "swift", "build", "--build-tests", "--package-path", str(package.directory),
            "--scratch-path", str(BUILD), "-Xswiftc", "-warnings-as-errors",
        ]
    )
    if status != 0:
        return problems + [f"{guide.relative}: the program does not build:\n{package.mapped(stdout + stderr)}"], ""
    summary = [f"built in {elapsed:.0f} s"]

    if lint:
        sources = [str(package.directory / relative) for relative in guide.files]
        status, stdout, stderr, _, _ = run(
            ["swift", "format", "lint", "--strict", "--configuration", str(ROOT / ".swift-format")] + sources
        )
        if status != 0 or stderr.strip():
            problems.append(f"{guide.relative}: swift format lint --strict:\n{package.mapped(stdout + stderr)}")

    targets = description["targets"]
    runs = []
    for target in targets:
        if target["type"] == "executable":
            runs.append((target["name"], [str(BUILD / "debug" / target["name"])], "Sources/" + target["name"] + "/"))
    if any(target["type"] == "test" for target in targets):
        runs.append(
            (
                "swift test",
                [
                    "swift", "test", "--skip-build", "--package-path", str(package.directory),
                    "--scratch-path", str(BUILD),
                ],
                "Tests/",
            )
        )
    claimed = 0
    for name, arguments, folder in runs:
        claims = [claim for claim in guide.claims if claim.file.startswith(folder)]
        server = NATSServer() if needs_nats(guide) else None
        environment = dict(os.environ, NATS_URL=server.url) if server else None
        try:
            with tempfile.TemporaryDirectory(prefix="guide-") as directory:
                status, stdout, stderr, elapsed, timed_out = run(
                    arguments, timeout=timeout, cwd=directory, environment=environment
                )
        finally:
            if server:
                server.stop()
        if timed_out:
            problems.append(
                f"{guide.relative}: {name} did not end within {timeout} seconds; it printed:\n{indent(stdout)}\n"
                f"  and on standard error:\n{indent(stderr)}"
            )
            continue
        if status != 0:
            problems.append(
                f"{guide.relative}: {name} exited with status {status}; it printed:\n{indent(stdout)}\n"
                f"  and on standard error:\n{indent(stderr)}"
            )
            continue
        problems += check_claims(guide, claims, stdout, name)
        claimed += len(claims)
        summary.append(f"{name} ran in {elapsed:.1f} s")
    unchecked = [claim for claim in guide.claims if not any(claim.file.startswith(folder) for _, _, folder in runs)]
    for claim in unchecked:
        problems.append(f"{guide.location(claim.guide_line)}: this claim belongs to {claim.file}, which nothing runs")
    summary.append(f"{claimed} claim{'s' if claimed != 1 else ''} checked")
    return problems, ", ".join(summary)


def indent(text, limit=60):
    lines = text.rstrip("\n").split("\n") if text.strip() else ["(nothing)"]
    if len(lines) > limit:
        lines = lines[:limit] + [f"... {len(lines) - limit} more lines"]
    return "\n".join(f"    | {line}" for line in lines)


def default_manifest():
    """Getting started's manifest: the package a reader sets up, used by guides that show none."""
    guide = Guide(MANIFEST_GUIDE)
    if not guide.manifest:
        raise GuideError(f"{guide.relative}: no manifest block (a block starting with // swift-tools-version)")
    return guide.manifest[0]


# Small guides, each with the problem the runner must report for it (None: it must pass).
SELF_TESTS = [
    (
        "Passes",
        None,
        'import DispatchStore\n\nlet dispatcher = Dispatcher()\nprint(2 + 2)  // Prints "4"\nprint("done")\n'
        '// Prints "done"\n',
    ),
    ("WrongClaim", "the guide says App prints\n    '5'", 'print(2 + 2)  // Prints "5"\n'),
    ("UncheckedComment", "the comment after print(...) is not checked", "print(2 + 2)  // 4\n"),
    ("OutOfOrder", "the guide says App prints\n    'a'", 'print("a")\nprint("b")  // Prints "b"\n// Prints "a"\n'),
    ("Fails", "App exited with status 3", "import Foundation\n\nexit(3)\n"),
    ("Hangs", "App did not end within 5 seconds", "import Foundation\n\nwhile true { sleep(1) }\n"),
    ("DoesNotBuild", "DoesNotBuild.md:4] error: cannot find 'undefined' in scope", "print(undefined)\n"),
    ("NotLinted", "swift format lint --strict", "let  spaced = 1\nprint(spaced)\n"),
]


def self_test(manifest):
    """Runs SELF_TESTS; returns 0 when the runner reported exactly what each one expects."""
    directory = SCRATCH / "self-test"
    directory.mkdir(parents=True, exist_ok=True)
    failures = 0
    for name, expected, code in SELF_TESTS:
        path = directory / f"{name}.md"
        path.write_text(f"# {name}\n\n```swift\n{code}```\n", encoding="utf-8")
        guide = Guide(path)
        try:
            problems, _ = run_guide(guide, manifest, timeout=5, lint=True)
        except GuideError as error:
            problems = [str(error)]
        report = "\n".join(problems)
        if expected is None:
            passed = not problems
        else:
            passed = expected in report
        print(f"self-test {name}: {'ok' if passed else 'FAILED'}")
        if not passed:
            failures += 1
            print(f"  expected {'no problem' if expected is None else repr(expected)}, got:\n{indent(report)}")
    return 1 if failures else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("guides", nargs="*", help="guides to run (default: README.md and Docs/*.md)")
    parser.add_argument("--timeout", type=int, default=120, help="seconds each program may run (default 120)")
    parser.add_argument("--no-lint", action="store_true", help="skip swift format lint of the guides' code")
    parser.add_argument("--self-test", action="store_true", help="check that the runner reports what it should")
    options = parser.parse_args()

    if options.guides:
        paths = [Path(path).resolve() for path in options.guides]
    else:
        paths = [ROOT / "README.md"] + sorted(
            path for path in (ROOT / "Docs").glob("*.md") if path.name != "README.md"
        )

    PACKAGES.mkdir(parents=True, exist_ok=True)
    link = PACKAGES / "DispatchStore"
    if not link.is_symlink():
        if link.exists():
            shutil.rmtree(link)
        link.symlink_to(os.path.relpath(ROOT, PACKAGES), target_is_directory=True)

    started = time.monotonic()
    failures = 0
    try:
        manifest = default_manifest()
    except GuideError as error:
        print(error)
        return 1
    if options.self_test:
        return self_test(manifest)
    for path in paths:
        guide = Guide(path)
        print(f"guide {guide.relative}: ", end="", flush=True)
        try:
            problems, summary = run_guide(guide, manifest, options.timeout, not options.no_lint)
        except GuideError as error:
            problems, summary = [str(error)], ""
        if problems:
            failures += 1
            print("FAILED")
            for problem in problems:
                print(problem)
        else:
            print(summary)
    print(f"guides: {len(paths) - failures} of {len(paths)} ran as written ({time.monotonic() - started:.0f} s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
