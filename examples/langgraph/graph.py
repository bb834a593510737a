"""A LangGraph incident workflow for ``car-verify workflow`` (no model, no network):

    pip install 'car-verify[langchain]'
    cd examples/langgraph && car-verify workflow graph:graph --workflow-policies policies.json

The triage router may send an incident straight to a hotfix, which deploys
without the human approval the policy requires; the fix itself is a subgraph.
"""

from __future__ import annotations

from typing import Literal, TypedDict

from langgraph.graph import END, START, StateGraph


class Incident(TypedDict):
    severity: int
    approved: bool


def step(state: Incident) -> Incident:
    return state


def triage(state: Incident) -> Literal["hotfix", "investigate"]:
    return "hotfix" if state["severity"] > 2 else "investigate"


def review(state: Incident) -> Literal["approve", "investigate"]:
    return "approve" if state["approved"] else "investigate"


fix = StateGraph(Incident)
fix.add_node("patch", step)
fix.add_node("test", step)
fix.add_edge(START, "patch")
fix.add_edge("patch", "test")
fix.add_edge("test", END)

builder = StateGraph(Incident)
builder.add_node("triage", step)
builder.add_node("investigate", step)
builder.add_node("hotfix", fix.compile())
builder.add_node("approve", step)
builder.add_node("deploy", step)
builder.add_edge(START, "triage")
builder.add_conditional_edges("triage", triage)
builder.add_conditional_edges("investigate", review)
builder.add_edge("approve", "deploy")
builder.add_edge("hotfix", "deploy")
builder.add_edge("deploy", END)

graph = builder.compile()
