# Scenarios for records-free replay (issue 12): sessions whose prompt
# changes between CLI processes (a resume with another flag or model), so
# the prompt_snapshot a later process writes differs from the first; and a
# subagent call (its requests are another issue's: reported, not rebuilt);
# where the effort (output_config) is sent when it is set or changed.
# Format: ../../../shared/capture/scenarios_shared.py's (see scripts/capture).

T = lambda s: {"type": "text", "text": s}
TU = lambda name, inp: {"type": "tool_use", "name": name, "input": inp}

SCENARIOS = [
    {"name": "resume-append-change", "files": {"README.md": "# demo\n"},
     "rules": [{"when": {"last_user_contains": "first"}, "reply": {"blocks": [T("First answer.")]}},
               {"when": {"last_user_contains": "second"}, "reply": {"blocks": [T("Second answer.")]}}],
     "steps": [{"prompt": "first: hi"},
               {"prompt": "second: again", "resume": True, "args": ["--append-system-prompt", "Be brief."]}]},

    {"name": "resume-model-change", "files": {"README.md": "# demo\n"},
     "rules": [{"when": {"last_user_contains": "first"}, "reply": {"blocks": [T("First answer.")]}},
               {"when": {"last_user_contains": "second"}, "reply": {"blocks": [T("Second answer.")]}}],
     "steps": [{"prompt": "first: hi"},
               {"prompt": "second: again", "resume": True, "args": ["--model", "sonnet"]}]},

    {"name": "effort-high", "files": {"README.md": "# demo\n"},
     "rules": [], "steps": [{"prompt": "hi", "args": ["--effort", "high"]}]},

    {"name": "resume-effort-change", "files": {"README.md": "# demo\n"},
     "rules": [{"when": {"last_user_contains": "first"}, "reply": {"blocks": [T("First answer.")]}},
               {"when": {"last_user_contains": "second"}, "reply": {"blocks": [T("Second answer.")]}},
               {"when": {"last_user_contains": "third"}, "reply": {"blocks": [T("Third answer.")]}}],
     "steps": [{"prompt": "first: hi"},
               {"prompt": "second: again", "resume": True, "args": ["--effort", "high"]},
               {"prompt": "third: and again", "resume": True, "args": ["--model", "sonnet", "--effort", "low"]}]},

    {"name": "subagent", "files": {"README.md": "# demo\n"},
     "rules": [{"when": {"last_user_contains": "explore", "last_is_tool_result": False}, "once": True,
                "reply": {"blocks": [TU("Agent", {"description": "List files", "prompt": "List the files here.",
                                                  "subagent_type": "general-purpose"})]}},
               {"when": {"last_is_tool_result": True}, "reply": {"blocks": [T("All done.")]}}],
     "steps": [{"prompt": "explore this project", "args": ["--allowedTools", "Agent"]}]},
]
