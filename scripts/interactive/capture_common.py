"""What the capture scripts beside this file share: a sandbox (a home
with `.claude.json` trusting a git project), `ctxasm mock-server` with a
script of replies and a record, the environment that points the CLI at
it, and what is kept afterwards (the transcripts, `conversation.jsonl`).
"""
import hashlib, json, os, subprocess, shutil

KEY = 'sk-ant-capture-0000000000000000000000'
T = lambda s: {"type": "text", "text": s}
TH = lambda s: {"type": "thinking", "thinking": s, "signature": "c2lnbmF0dXJl"}
TU = lambda n, i: {"type": "tool_use", "name": n, "input": i}


def sandbox(name, files, config=None):
    """A fresh `$TMPDIR/<name>` with `home/` and a git project `proj/`
    holding `files` (name -> text); `config` is merged into the
    `.claude.json` written. Returns (root, home, proj)."""
    root = os.path.join(os.environ.get('TMPDIR', '/tmp'), name)
    shutil.rmtree(root, ignore_errors=True)
    home, proj = root + '/home', root + '/proj'
    os.makedirs(home); os.makedirs(proj)
    for n, t in files.items():
        open(os.path.join(proj, n), 'w').write(t)
    subprocess.run(['git', 'init', '-q', '-b', 'main'], cwd=proj)
    cfg = {"hasCompletedOnboarding": True,
           "projects": {proj: {"hasTrustDialogAccepted": True, "allowedTools": [], "hasCompletedProjectOnboarding": True}}}
    cfg.update(config or {})
    json.dump(cfg, open(home + '/.claude.json', 'w'))
    return root, home, proj


def mock_server(root, out, rules, stderr=subprocess.DEVNULL):
    """`ctxasm mock-server` (the release build) replying by `rules`,
    recording to `out/wire.jsonl` (`out` made afresh). Returns (process,
    base URL)."""
    json.dump(rules, open(root + '/rules.json', 'w'))
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    exe = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'target', 'release', 'ctxasm')
    srv = subprocess.Popen([exe, 'mock-server', '--addr', '127.0.0.1:0', '--record', out + '/wire.jsonl',
                            '--script', root + '/rules.json'], stdout=subprocess.PIPE, stderr=stderr, text=True)
    return srv, 'http://' + srv.stdout.readline().strip()[len('listening on '):]


def cli_env(home, base, **more):
    """The CLI's environment: offline against `base`."""
    env = {"PATH": os.environ["PATH"], "HOME": home, "IS_SANDBOX": "1", "ANTHROPIC_BASE_URL": base,
           "ANTHROPIC_API_KEY": KEY, "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_TELEMETRY": "1",
           "DISABLE_AUTOUPDATER": "1"}
    env.update(more)
    return env


def keep(home, out, srv):
    """Stop the server, copy the transcripts to `out/transcripts` and write
    `out/conversation.jsonl`: per conversation request (the ones with
    tools), the SHA-256 of its system and tools as sent and its messages."""
    srv.terminate(); srv.wait()
    shutil.copytree(home + '/.claude/projects', out + '/transcripts', dirs_exist_ok=True)
    digest = lambda v: hashlib.sha256(json.dumps(v, separators=(',', ':'), ensure_ascii=False).encode()).hexdigest()
    with open(out + '/conversation.jsonl', 'w') as f:
        for line in open(out + '/wire.jsonl'):
            body = json.loads(line)['body']
            if body.get('tools'):
                f.write(json.dumps({"system_sha256": digest(body['system']), "tools_sha256": digest(body['tools']),
                                    "messages": body['messages']}, ensure_ascii=False) + "\n")


def terminal_sandbox(name, files):
    """`sandbox` for the CLI in a terminal: onboarding done and the API key
    approved, so the first screen is the prompt."""
    return sandbox(name, files, {"theme": "dark", "numStartups": 5,
                                 "customApiKeyResponses": {"approved": [KEY[-20:]], "rejected": []}})


class Terminal:
    """The CLI in a terminal (pexpect, 150 x 50), what it shows logged to
    `out/tty.log` (escape sequences out)."""

    def __init__(self, claude, proj, env, out):
        import pexpect
        self.pexpect = pexpect
        self.log = open(out + '/tty.log', 'w')
        self.c = pexpect.spawn(claude, [], cwd=proj, env=env, encoding='utf-8', dimensions=(50, 150), timeout=60)
        self.wait(6)

    def wait(self, s=3):
        import re, time
        end, buf = time.time() + s, ''
        while time.time() < end:
            try:
                buf += self.c.read_nonblocking(100000, timeout=0.3)
            except self.pexpect.TIMEOUT:
                pass
            except self.pexpect.EOF:
                break
        self.log.write('\n=====\n' + re.sub(r'\x1b\[[0-9;?]*[a-zA-Z]', '', buf)[-1500:]); self.log.flush()

    def prompt(self, text):
        """Type `text`, Enter, and let the answer come."""
        self.c.send(text); self.wait(1); self.c.send('\r'); self.wait(6)

    def escape(self):
        """Esc (refuses a permission dialog)."""
        self.c.send('\x1b'); self.wait(4)

    def quit(self):
        self.c.sendcontrol('c'); self.wait(1); self.c.sendcontrol('c'); self.wait(2)
        self.c.terminate(force=True)
