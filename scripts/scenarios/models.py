# Scenarios that show a release's model-dependent text and params (issue 12,
# the late 2.1.x ladder): the same prompt as `model-sonnet` of
# ../shared/capture/scenarios_shared.py, run with the haiku alias. Format:
# scripts/capture's docstring.
SCENARIOS = [
    {"name": "model-haiku", "files": {},
     "rules": [], "steps": [{"prompt": "hi", "args": ["--model", "haiku"]}]},
]
