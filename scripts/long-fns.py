#!/usr/bin/env python3
"""Lists the functions in src/ longer than a screen (60 lines, signature to closing brace).

Usage: scripts/long-fns.py [--limit N] [DIR]. Prints `lines path:line name` per function and
the count last. A rough brace matcher: strings, chars and comments are skipped, which is enough
for rustfmt-formatted code."""
import re, sys, pathlib

FN = re.compile(r'^\s*(pub(\([^)]*\))?\s+)?(const\s+)?(async\s+)?(unsafe\s+)?(extern\s+"[^"]*"\s+)?fn\s+(\w+)')

def strip(line, state):
    """The line without string/char literals and comments; `state` carries a block comment."""
    out, i, n = [], 0, len(line)
    while i < n:
        if state['block']:
            j = line.find('*/', i)
            if j < 0:
                return ''.join(out)
            state['block'], i = False, j + 2
            continue
        c = line[i]
        if line.startswith('//', i):
            break
        if line.startswith('/*', i):
            state['block'], i = True, i + 2
            continue
        if c == '"' or (c == 'r' and re.match(r'r#*"', line[i:]) and (i == 0 or not line[i-1].isalnum())):
            m = re.match(r'(r(#*))?"', line[i:])
            hashes = m.group(2) or ''
            raw = m.group(1) is not None
            i += len(m.group(0))
            end = '"' + hashes
            while i < n:
                if not raw and line[i] == '\\':
                    i += 2
                    continue
                if line.startswith(end, i):
                    i += len(end)
                    break
                i += 1
            continue
        if c == "'":
            m = re.match(r"'(\\.|[^\\'])'|'\\u\{[0-9a-fA-F]+\}'", line[i:])
            if m:
                i += len(m.group(0))
                continue
        out.append(c)
        i += 1
    return ''.join(out)

def functions(path):
    lines = path.read_text(encoding='utf-8', errors='replace').splitlines()
    state = {'block': False}
    code = [strip(l, state) for l in lines]
    found = []
    for start, text in enumerate(code):
        m = FN.match(text)
        if not m:
            continue
        depth, opened = 0, False
        for end in range(start, len(code)):
            for ch in code[end]:
                if ch == '{':
                    depth, opened = depth + 1, True
                elif ch == '}':
                    depth -= 1
                elif ch == ';' and not opened and depth == 0:
                    break
            else:
                if opened and depth == 0:
                    found.append((end - start + 1, start + 1, m.group(7)))
                    break
                continue
            break
    return found

def main():
    args = sys.argv[1:]
    limit = 60
    if args[:1] == ['--limit']:
        limit, args = int(args[1]), args[2:]
    root = pathlib.Path(args[0] if args else 'src')
    long = []
    for path in sorted(root.rglob('*.rs')):
        for n, line, name in functions(path):
            if n > limit:
                long.append((n, f'{path}:{line}', name))
    for n, where, name in sorted(long, reverse=True):
        print(f'{n:5} {where} {name}')
    print(f'{len(long)} functions over {limit} lines')

main()
