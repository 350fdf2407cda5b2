"""Talking to GitHub: webhook payloads and their routing, the App client, check runs, trees, linked issues.

Imports no other part of bot/ but settings, logs and metrics (.importlinter).
"""
