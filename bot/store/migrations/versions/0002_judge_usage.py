"""judge records carry the tokens and cost of the judge call that made them

Revision ID: 0002
Revises: 0001
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # Existing records were made before usage was kept: zero, as the calibration table shows them.
    with op.batch_alter_table("judge_records", schema=None) as batch_op:
        batch_op.add_column(sa.Column("prompt_tokens", sa.Integer(), nullable=False, server_default="0"))
        batch_op.add_column(sa.Column("completion_tokens", sa.Integer(), nullable=False, server_default="0"))
        batch_op.add_column(sa.Column("cost_usd", sa.Float(), nullable=False, server_default="0"))


def downgrade() -> None:
    with op.batch_alter_table("judge_records", schema=None) as batch_op:
        batch_op.drop_column("cost_usd")
        batch_op.drop_column("completion_tokens")
        batch_op.drop_column("prompt_tokens")
