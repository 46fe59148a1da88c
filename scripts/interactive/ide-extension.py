#!/usr/bin/env python3
"""Drive Claude Code the way the VS Code extension of the 2.0 era does, as
its transcripts show: each prompt a user message in stream-json whose
first text block is the IDE context (`<ide_opened_file>…`), each prompt
in a process of its own that resumes the session (`--resume`), against
`ctxasm mock-server` (four prompts, the first two @-mentioning a file; a
Read on the first, plain answers after). Needs a release build.
Keeps in OUT_DIR the server's record (wire.jsonl), the transcripts and
conversation.jsonl: per conversation request (the ones with tools), the
SHA-256 of its system and tools as sent and its messages.

usage: scripts/interactive/ide-extension.py CLAUDE_BIN OUT_DIR [CLI ARGS...]
"""
import hashlib, json, os, subprocess, sys, time, shutil
claude=os.path.abspath(sys.argv[1]); out=os.path.abspath(sys.argv[2]); extra=sys.argv[3:]
shutil.rmtree(out, ignore_errors=True)
root=os.path.join(os.environ.get('TMPDIR', '/tmp'), 'ctxasm-ide-extension'); shutil.rmtree(root, ignore_errors=True)
home, proj = root+'/home', root+'/proj'
os.makedirs(home); os.makedirs(proj)
for n,t in (('README.md','# demo\n'),('app.js','console.log("hi");\n')): open(os.path.join(proj,n),'w').write(t)
subprocess.run(['git','init','-q','-b','main'],cwd=proj)
key='sk-ant-capture-0000000000000000000000'
json.dump({"hasCompletedOnboarding": True,"projects": {proj: {"hasTrustDialogAccepted": True,"allowedTools": [],"hasCompletedProjectOnboarding": True}}}, open(home+'/.claude.json','w'))
T=lambda s: {"type":"text","text":s}
TU=lambda n,i: {"type":"tool_use","name":n,"input":i}
rules=[{"when":{"last_user_contains":"read app.js","last_is_tool_result":False,"has_tool":"Read"},"once":True,"reply":{"blocks":[T("Reading."),TU("Read",{"file_path":proj+"/app.js"})]}},
       {"when":{},"reply":{"blocks":[T("ok")]}}]
json.dump(rules, open(root+'/rules.json','w'))
os.makedirs(out, exist_ok=True)
srv=subprocess.Popen([os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'target', 'release', 'ctxasm'),'mock-server','--addr','127.0.0.1:0','--record',out+'/wire.jsonl','--script',root+'/rules.json'],stdout=subprocess.PIPE,stderr=subprocess.DEVNULL,text=True)
base='http://'+srv.stdout.readline().strip()[len('listening on '):]
env={"PATH":os.environ["PATH"],"HOME":home,"IS_SANDBOX":"1","ANTHROPIC_BASE_URL":base,"ANTHROPIC_API_KEY":key,
     "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC":"1","DISABLE_TELEMETRY":"1","DISABLE_AUTOUPDATER":"1"}
sid=[None]
def send(blocks):
    global p
    args=[claude,'--input-format','stream-json','--output-format','stream-json','--verbose','--permission-mode','acceptEdits','--allowedTools','Read']+extra
    if sid[0]: args+=['--resume',sid[0]]
    p=subprocess.Popen(args,cwd=proj,env=env,stdin=subprocess.PIPE,stdout=subprocess.PIPE,stderr=open(out+'/stderr.log','a'),text=True)
    send1(blocks)
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
srv.terminate(); srv.wait()
shutil.copytree(home+'/.claude/projects', out+'/transcripts', dirs_exist_ok=True)
with open(out + '/conversation.jsonl', 'w') as f:
    for line in open(out + '/wire.jsonl'):
        body = json.loads(line)['body']
        if not body.get('tools'):
            continue
        digest = lambda v: hashlib.sha256(json.dumps(v, separators=(',', ':'), ensure_ascii=False).encode()).hexdigest()
        f.write(json.dumps({"system_sha256": digest(body['system']), "tools_sha256": digest(body['tools']),
                            "messages": body['messages']}, ensure_ascii=False) + "\n")
print('done')
