"""runs carry the key of their inputs: a repeat of identical inputs is answered from the store

Revision ID: 0004
Revises: 0003
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # Runs stored before this have no key: they are never reused.
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.add_column(sa.Column("reuse_key", sa.String(length=64), nullable=True))
        batch_op.create_index("ix_runs_reuse_key", ["reuse_key"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.drop_index("ix_runs_reuse_key")
        batch_op.drop_column("reuse_key")
