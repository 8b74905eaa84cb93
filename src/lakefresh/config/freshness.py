"""How fresh a target must be (`lakefresh freshness`): how long since its newest batch was
loaded before it warns, and before it is an error. As dbt's source freshness (`warn_after`,
`error_after`), over what lakefresh itself records: each published batch's time."""

from __future__ import annotations

from pydantic import Field, field_validator, model_validator

from lakefresh.config.base import Duration, Model, parse_duration


class FreshnessConfig(Model):
    """A target's freshness: its newest loaded batch may be this old (durations: 90m, 12h, 2d)."""

    warn_after: Duration | None = Field(None, description="Warn when the newest batch was loaded longer ago.")
    error_after: Duration | None = Field(
        None, description="An error (exit code 1 of `lakefresh freshness`) when it was loaded longer ago."
    )

    @field_validator("warn_after", "error_after", mode="before")
    @classmethod
    def _duration(cls, value: object) -> float | None:
        return None if value is None else parse_duration(value)  # type: ignore[arg-type]

    @model_validator(mode="after")
    def _some_bound(self) -> FreshnessConfig:
        if self.warn_after is None and self.error_after is None:
            raise ValueError("give warn_after, error_after or both, e.g. {warn_after: 1d, error_after: 2d}")
        if (
            self.warn_after is not None
            and self.error_after is not None
            and self.warn_after > self.error_after
        ):
            raise ValueError("warn_after must not be longer than error_after")
        return self

    def verdict(self, age: float | None) -> str:
        """`error`, `warn` or `pass` for a newest batch loaded `age` seconds ago (None: never
        loaded, an error when there is an error bound, else a warning)."""
        if age is None:
            return "error" if self.error_after is not None else "warn"
        if self.error_after is not None and age > self.error_after:
            return "error"
        if self.warn_after is not None and age > self.warn_after:
            return "warn"
        return "pass"
