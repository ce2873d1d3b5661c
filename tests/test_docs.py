"""What README.md and docs/*.md name exists: every repository path (a file, a folder, a glob, a link to
another page), every ``make`` target and every flag of our tools (checked against the tool's own
argparse parser). A failure names the page, the line and the missing thing."""
import argparse
import inspect
import re
import sys
from functools import lru_cache
from pathlib import Path
from typing import Iterator, List, Optional, Set, Tuple
from unittest import mock

import pytest

from helpers.tool_modules import REPO, import_tool

PAGES = [REPO / 'README.md', *sorted((REPO / 'docs').glob('*.md'))]
#: The repository's top-level folders a path in the docs starts from (data/, work_dirs/ and checkpoints/
#: are what the tools and the user create).
FOLDERS = ('configs', 'demo', 'docs', 'mmrmt', 'requirements', 'tests', 'tools')
PATH = re.compile(r'(?<![\w./~:@-])((?:%s)/[\w./*-]*)' % '|'.join(FOLDERS))
LINK = re.compile(r'\]\(([^)\s]+)\)')
CODE_SPAN = re.compile(r'`([^`\n]+)`')
MAKE = re.compile(r'(?<![\w-])make ([a-z][\w-]*)')
FLAG = re.compile(r'(?<![\w-])(--[a-z][\w-]*)')
#: A tool named by its path or, in prose, by its file name.
TOOL = re.compile(r'(?<![\w-])((?:tools|demo)/[\w/-]+\.(?:py|sh)|[\w-]+\.(?:py|sh))(?![\w/-])')
#: Where a shell command ends (a pipe, a list, a redirection).
COMMAND_END = re.compile(r'\s(?:\||;|&&|>|2>)\s')
#: The launchers whose flags after the script's own arguments are the Python tool's.
LAUNCHERS = {'tools/dist_train.sh': 'tools/train.py', 'tools/dist_test.sh': 'tools/test.py',
             'tools/slurm_train.sh': 'tools/train.py', 'tools/slurm_test.sh': 'tools/test.py'}
#: Flags the docs give to other programs than ours (pip, pytest, git, torchrun, mmdet's and mmseg's
#: own tools take our tools' flags and are checked through them).
OTHER_PROGRAMS = {'--no-deps', '--no-build-isolation', '--durations', '--nproc_per_node', '--nnodes',
                  '--node_rank', '--master_addr', '--master_port', '--find-links', '--index-url', '--user',
                  '--editable', '--upgrade', '--extra-index-url', '--collect-only', '--last-failed', '--lf',
                  '--cov', '--help', '--version', '--depth', '--dist'}


class ParserSeen(Exception):
    """Raised by a patched ``parse_known_args`` with the parser a tool built."""


def code_lines(text: str) -> Iterator[Tuple[int, str]]:
    """(line number, command) of each code span and each line of a fenced block (a line ending in a
    backslash continued by the next)."""
    fenced = False
    pending: Optional[Tuple[int, str]] = None
    for number, line in enumerate(text.splitlines(), 1):
        if line.lstrip().startswith('```'):
            fenced = not fenced
            continue
        if fenced:
            start, before = pending or (number, '')
            if line.rstrip().endswith('\\'):
                pending = (start, before + line.rstrip()[:-1] + ' ')
                continue
            pending = None
            yield start, before + line
        else:
            yield from ((number, span) for span in CODE_SPAN.findall(line))


def tool_paths() -> dict:
    """Each tool's path by its path and by its file name (the names are unique)."""
    paths = [path.relative_to(REPO).as_posix() for folder in ('tools', 'demo') for pattern in ('*.py', '*.sh')
             for path in (REPO / folder).rglob(pattern)]
    return {**{Path(path).name: path for path in paths}, **{path: path for path in paths}}


@lru_cache(maxsize=None)
def tool_flags(path: str) -> frozenset:
    """The option strings of the argparse parser the tool at ``path`` builds (none for a shell script
    that is no launcher or a module without ``main``), read by calling its ``main`` with
    ``parse_known_args`` stopped."""
    if path in LAUNCHERS:
        return tool_flags(LAUNCHERS[path])
    if path.endswith('.sh'):
        return frozenset()

    def stop(parser, *args, **kwargs):
        raise ParserSeen(parser)

    module = import_tool(path)
    if not hasattr(module, 'main'):
        return frozenset()  # a module beside the tools, not a tool
    with mock.patch.object(argparse.ArgumentParser, 'parse_known_args', stop), \
            mock.patch.object(sys, 'argv', [path]):
        try:
            module.main() if inspect.signature(module.main).parameters == {} else module.main([])
        except ParserSeen as seen:
            parser = seen.args[0]
    return frozenset(option for action in parser._actions for option in action.option_strings)


def make_targets() -> Set[str]:
    return set(re.findall(r'^([\w-]+):', (REPO / 'Makefile').read_text(), re.M))


#: After these on a line, a path is another project's (``mmdeploy's `tools/deploy.py```).
FOREIGN = re.compile(r"\b(?:mmdeploy|mmdet|mmseg|mmengine|mmpretrain|timm)'s\b")
#: A placeholder file name (``tools/X.py``, ``tests/x.py``).
PLACEHOLDER = re.compile(r'^(?:[A-Z_]+|[a-z])$')


def repository_paths(line: str) -> List[str]:
    """The repository paths ``line`` names: not another project's, not a placeholder, not what pip
    installs (``mmrmt/.mim/``), not a tool's quoted ``error:`` line (it quotes the user's input)."""
    if line.startswith('error: '):
        return []
    foreign = FOREIGN.search(line)
    ours = line[:foreign.start()] if foreign else line
    return [path.rstrip('.') for path in PATH.findall(ours)
            if '/.mim' not in path and not PLACEHOLDER.match(Path(path.rstrip('.')).stem)]


def missing_paths(page: Path) -> Iterator[Tuple[int, str]]:
    for number, line in enumerate(page.read_text().splitlines(), 1):
        for link in LINK.findall(line):
            target = link.split('#')[0]
            if target and not re.match(r'[a-z]+:', target) and not (page.parent / target).exists():
                yield number, f'link target {link} (from {page.parent.relative_to(REPO).as_posix() or "."}/)'
        for path in repository_paths(line):
            found = list(REPO.glob(path)) if '*' in path else [REPO / path] if (REPO / path).exists() else []
            if not found:
                yield number, f'path {path}'


def commands(page: Path) -> Iterator[Tuple[int, Optional[str], List[str]]]:
    """(line, tool path or None, flags) of each command in the page's code: the flags after a tool's
    name are that tool's; those before any are checked against every tool."""
    tools = tool_paths()
    for number, code in code_lines(page.read_text()):
        for command in COMMAND_END.split(code):
            pieces = TOOL.split(command)
            yield number, None, FLAG.findall(pieces[0])
            for name, arguments in zip(pieces[1::2], pieces[2::2]):
                yield number, tools.get(name), FLAG.findall(arguments)


def problems(page: Path) -> List[str]:
    name = page.relative_to(REPO).as_posix()
    found = [f'{name}:{number}: {what} does not exist' for number, what in missing_paths(page)]
    targets = make_targets()
    every_flag = set().union(*(tool_flags(path) for path in set(tool_paths().values())))
    for number, code in code_lines(page.read_text()):
        found += [f'{name}:{number}: make target {target!r} is not in the Makefile'
                  for target in MAKE.findall(code) if target not in targets]
    for number, tool, flags in commands(page):
        known = tool_flags(tool) if tool else every_flag | OTHER_PROGRAMS
        found += [f'{name}:{number}: {flag} is not a flag of {tool or "any of our tools"}'
                  for flag in flags if flag not in known]
    return found


@pytest.mark.parametrize('page', PAGES, ids=lambda page: page.relative_to(REPO).as_posix())
def test_every_path_make_target_and_flag_the_docs_name_exists(page):
    found = problems(page)
    assert not found, '\n'.join(found)
