#!/usr/bin/env python3
"""Drive Claude Code the way the VS Code extension of the 2.0 era does, as
its transcripts show: each prompt a user message in stream-json whose
first text block is the IDE context (`<ide_opened_file>…`), each prompt
in a process of its own that resumes the session (`--resume`), against
`ctxasm mock-server` (seven prompts, the first two @-mentioning a file,
the fourth and sixth with IDE context only; a Read on the first, plain
answers after). Needs a release build.
With ONE_PROCESS=1 in the environment all four prompts go to one
long-lived process instead (the extension's other way of running: one
stream-json process per conversation).
Keeps in OUT_DIR the server's record (wire.jsonl), the transcripts and
conversation.jsonl: per conversation request (the ones with tools), the
SHA-256 of its system and tools as sent and its messages.

usage: [ONE_PROCESS=1] scripts/interactive/ide-extension.py CLAUDE_BIN OUT_DIR [CLI ARGS...]
"""
import json, os, subprocess, sys, time, shutil
from capture_common import T, TU, sandbox, mock_server, cli_env, keep
claude=os.path.abspath(sys.argv[1]); out=os.path.abspath(sys.argv[2]); extra=sys.argv[3:]
shutil.rmtree(out, ignore_errors=True)
root, home, proj = sandbox('ctxasm-ide-extension', {'README.md': '# demo\n', 'app.js': 'console.log("hi");\n'})
rules=[{"when":{"last_user_contains":"read app.js","last_is_tool_result":False,"has_tool":"Read"},"once":True,"reply":{"blocks":[T("Reading."),TU("Read",{"file_path":proj+"/app.js"})]}},
       {"when":{},"reply":{"blocks":[T("ok")]}}]
srv, base = mock_server(root, out, rules)
env=cli_env(home, base)
sid=[None]
one=os.environ.get('ONE_PROCESS')=='1'
p=None
def send(blocks):
    global p
    if one and p:
        send1(blocks); return
    args=[claude,'--input-format','stream-json','--output-format','stream-json','--verbose','--permission-mode','acceptEdits','--allowedTools','Read']+extra
    if sid[0]: args+=['--resume',sid[0]]
    p=subprocess.Popen(args,cwd=proj,env=env,stdin=subprocess.PIPE,stdout=subprocess.PIPE,stderr=open(out+'/stderr.log','a'),text=True)
    send1(blocks)
    if not one:
        p.stdin.close(); p.wait(30)
def send1(blocks):
    p.stdin.write(json.dumps({"type":"user","message":{"role":"user","content":blocks}})+"\n"); p.stdin.flush()
    while True:
        line=p.stdout.readline()
        if not line: print('EOF'); return
        m=json.loads(line)
        if m.get('session_id'): sid[0]=m['session_id']
        if m.get('type')=='result': print('result', m.get('subtype'), sid[0]); return
ide=lambda f: T(f"<ide_opened_file>The user opened the file {proj}/{f} in the IDE. This may or may not be related to the current task.</ide_opened_file>")
send([ide("app.js"), T("first: read app.js please, and look at @README.md")])
time.sleep(1)
send([ide("README.md"), T("second: and now? see @app.js")])
time.sleep(1)
send([T("third: anything else?")])
send([ide('app.js'), T("fourth: done?")])
send([T("fifth: plain")])
send([ide("README.md"), T("sixth: ide only")])
send([T("seventh: plain")])
if one:
    p.stdin.close(); p.wait(30)
keep(home, out, srv)
print('done')
