"""Settings, read once at the edge (app start, CLI) from ``FORKPATHS_*`` environment variables or ``.env``.

Domain code never reads the environment: it receives these values (or the small config objects built from
them, such as :class:`evaluation.sandbox.SandboxLimits`) as arguments.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Literal
from urllib.parse import urlsplit

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from evaluation.llm import LLMConfig

if TYPE_CHECKING:
    from curation.artifacts import ArtifactStore

__all__ = ["PROJECT_ROOT", "SessionPolicy", "Settings", "ThrottlePolicy", "endpoint_identity"]

PROJECT_ROOT = Path(__file__).resolve().parents[1]


def endpoint_identity(url: str) -> tuple[str, str, int, str] | None:
    """What makes two endpoint URLs the same place for a credential: scheme, host, port (the scheme's default when
    none is written) and path without a trailing slash; letter case of scheme and host does not count. ``None``
    for a URL that is not http(s) or cannot be read (it matches nothing, so no key goes there)."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https") or not parts.hostname:
        return None
    return scheme, parts.hostname.lower(), port or (443 if scheme == "https" else 80), parts.path.rstrip("/")


@dataclass(frozen=True)
class SessionPolicy:
    """How long a sign-in lasts: at most ``max_age`` after signing in, and ``idle`` after the last click."""

    max_age: timedelta = timedelta(hours=24)
    idle: timedelta = timedelta(minutes=120)


@dataclass(frozen=True)
class ThrottlePolicy:
    """Failed sign-ins: after ``max_failures`` within ``window``, refuse for ``first_delay``, doubling with each
    further failure up to ``max_delay``."""

    max_failures: int = 5
    window: timedelta = timedelta(minutes=15)
    first_delay: timedelta = timedelta(seconds=30)
    max_delay: timedelta = timedelta(minutes=15)


class Settings(BaseSettings):
    """Every setting of forkpaths; each can be set as ``FORKPATHS_<NAME>`` (see ``.env.example``)."""

    model_config = SettingsConfigDict(env_prefix="FORKPATHS_", env_file=".env", extra="ignore")

    data_dir: Path = Field(
        default=Path("forkpaths-data"),
        description="Where the SQLite file, registered datasets and the first admin's password are kept.",
    )
    database_url: str | None = Field(
        default=None,
        description="SQLAlchemy URL; empty means a SQLite file in data_dir. "
        "PostgreSQL: postgresql+psycopg://user@host:5432/dbname",
    )
    artifact_dir: Path | None = Field(
        default=None,
        description="The content-addressed artifact store (releases, submissions, results) shared by every "
        "machine that scores runs: a network filesystem or a mounted bucket. Empty means data_dir/artifacts.",
    )
    starter_datasets_dir: Path | None = Field(
        default=PROJECT_ROOT / "datasets",
        description="Folders in BLADE layout registered on first start; empty to skip.",
    )
    load_starter_datasets: bool = True
    admin_username: str = "admin"
    admin_password: SecretStr | None = Field(
        default=None,
        description="Password of the first admin, created on first start when no user exists. "
        "If unset, a random one is generated, printed once and saved in data_dir/first-admin-password.txt.",
    )
    max_upload_mb: float = Field(default=200.0, gt=0, description="Largest accepted data file, in MB.")
    sandbox: Literal["bwrap", "process"] = Field(
        default="bwrap",
        description="How analysts' code is isolated: 'bwrap' runs every job under bubblewrap in its own "
        "namespaces (checks are refused where bubblewrap or user namespaces are missing); 'process' runs it as "
        "a plain child process with rlimits and an audit hook only (weak isolation, for machines without "
        "bubblewrap, e.g. macOS).",
    )
    max_submission_mb: float = Field(default=50.0, gt=0, description="Largest accepted agent submission, in MB.")
    worker_stalled_after_s: float = Field(
        default=10.0, ge=1.0, le=3600.0,
        description="A `forkpaths worker` silent this long (no heartbeat) is presumed dead and its jobs are retried "
                    "by another worker; heartbeats and the look-out for stalled jobs run proportionally more often.")
    sandbox_timeout_s: float = Field(default=30.0, gt=0)
    sandbox_memory_mb: int = Field(default=4096, gt=64)
    score_analysis_timeout_s: float = Field(
        default=60.0, gt=0, description="Scoring: wall clock one analysis's code may run before it is stopped "
        "(the analysis gets the status 'timeout'; its variables and model still score)."
    )
    score_run_budget_s: float = Field(
        default=7200.0, gt=0, description="Scoring: wall clock of a whole run; analyses not reached when it runs "
        "out get the status 'budget_exhausted' and the run ends."
    )
    max_analyses_per_submission: int = Field(
        default=2000, ge=1, description="Scoring: a submission file with more analyses is refused."
    )
    session_max_age_hours: float = Field(
        default=24.0, gt=0, description="A sign-in lasts at most this long, however active the user is."
    )
    session_idle_minutes: float = Field(
        default=120.0, gt=0, description="A sign-in ends after this long without any click."
    )
    sign_in_max_failures: int = Field(
        default=5, ge=1, description="Failed sign-ins (per account name and per client) before throttling."
    )
    sign_in_window_minutes: float = Field(
        default=15.0, gt=0, description="Failures older than this are forgotten (unless a delay is running)."
    )
    sign_in_delay_seconds: float = Field(
        default=30.0, gt=0, description="First refusal delay; each further failure doubles it."
    )
    sign_in_max_delay_minutes: float = Field(default=15.0, gt=0, description="Longest refusal delay.")
    llm_base_url: str | None = None
    llm_model: str | None = None
    llm_api_key: SecretStr | None = None
    llm_timeout_s: float = Field(default=120.0, gt=0, description="Wall-clock seconds one LLM request may take, from connecting to the last byte of its answer (a deadline, not a per-read timeout).")
    llm_max_retries: int = Field(default=4, ge=0, description="Retries on 429, 5xx and timeouts (backoff doubles).")
    agent_prices: dict[str, tuple[float, float]] = Field(
        default_factory=dict,
        description="Agent runs' prices in USD per million tokens, by model: JSON such as "
        '{"gpt-4o": [2.5, 10.0]} (input, output). A model without a price gets tokens but no cost.')
    agent_api_key: SecretStr | None = Field(
        default=None, description="The key agent runs send to the server's own endpoint (FORKPATHS_LLM_BASE_URL) "
        "instead of FORKPATHS_LLM_API_KEY; it goes to no other address (see agent_endpoint_keys).")
    agent_endpoint_keys: dict[str, SecretStr] = Field(
        default_factory=dict,
        description="Keys the admin configured for other endpoints agent runs may call: JSON such as "
        '{"https://api.example.com/v1": "sk-..."}. A run whose endpoint is one of these URLs (same scheme, host, '
        "port and path) sends that key; a run at any other address sends none of the server's keys.")

    @field_validator("agent_endpoint_keys")
    @classmethod
    def _endpoint_urls(cls, value: dict[str, SecretStr]) -> dict[str, SecretStr]:
        for url in value:
            if endpoint_identity(url) is None:
                raise ValueError(f"'{url[:200]}' is not an http(s) URL with a host; each key of the map is an "
                                 "endpoint's base URL, e.g. https://api.example.com/v1")
        return value

    def agent_endpoint_key(self, base_url: str) -> SecretStr | None:
        """The key an agent run at ``base_url`` may send: the server's LLM key (or FORKPATHS_AGENT_API_KEY) only
        to the server's configured base URL, a key from ``agent_endpoint_keys`` only to its own URL, and nothing
        anywhere else: a URL a user typed never receives a credential configured for another address."""
        where = endpoint_identity(base_url)
        if where is None:
            return None
        for url, key in self.agent_endpoint_keys.items():
            if endpoint_identity(url) == where:
                return key
        if self.llm_base_url and endpoint_identity(self.llm_base_url) == where:
            return self.agent_api_key or self.llm_api_key
        return None

    def with_endpoint_key(self, base_url: str, key: str) -> Settings:
        """These settings with a key a user typed for ``base_url`` (kept in this process only, never stored): the
        run at that address sends it, and no other address gets it."""
        keys = {u: k for u, k in self.agent_endpoint_keys.items()
                if endpoint_identity(u) != endpoint_identity(base_url)}
        return self.model_copy(update={"agent_endpoint_keys": {**keys, base_url: SecretStr(key)}})

    @property
    def resolved_data_dir(self) -> Path:
        return self.data_dir.expanduser().resolve()

    @property
    def resolved_database_url(self) -> str:
        if self.database_url:
            return self.database_url
        return f"sqlite:///{self.resolved_data_dir / 'forkpaths.db'}"

    @property
    def session_policy(self) -> SessionPolicy:
        return SessionPolicy(
            max_age=timedelta(hours=self.session_max_age_hours),
            idle=timedelta(minutes=self.session_idle_minutes),
        )

    @property
    def throttle_policy(self) -> ThrottlePolicy:
        return ThrottlePolicy(
            max_failures=self.sign_in_max_failures,
            window=timedelta(minutes=self.sign_in_window_minutes),
            first_delay=timedelta(seconds=self.sign_in_delay_seconds),
            max_delay=timedelta(minutes=self.sign_in_max_delay_minutes),
        )

    @property
    def first_admin_password_file(self) -> Path:
        """Where a generated first-admin password is written; removed once that password no longer works."""
        return self.resolved_data_dir / "first-admin-password.txt"

    @property
    def max_upload_bytes(self) -> int:
        return int(self.max_upload_mb * 1024 * 1024)

    @property
    def max_submission_bytes(self) -> int:
        return int(self.max_submission_mb * 1024 * 1024)

    @property
    def upload_widget_mb(self) -> int:
        """What the data-file uploaders state (and let through): the limit in whole MB, rounded up."""
        return max(1, math.ceil(self.max_upload_mb))

    @property
    def submission_widget_mb(self) -> int:
        """What the submission uploader states (and lets through): the limit in whole MB, rounded up."""
        return max(1, math.ceil(self.max_submission_mb))

    @property
    def server_upload_mb(self) -> int:
        """Streamlit's own cap on any upload (server.maxUploadSize): at least the larger of the two limits, so
        the web server never refuses a file the app would accept (each uploader states its own limit)."""
        return max(self.upload_widget_mb, self.submission_widget_mb)

    @property
    def runs_store(self) -> Path:
        """Where scoring runs kept their files before the artifact store (imported into it at start)."""
        return self.resolved_data_dir / "runs"

    @property
    def resolved_artifact_dir(self) -> Path:
        return self.artifact_dir.expanduser().resolve() if self.artifact_dir else self.resolved_data_dir / "artifacts"

    def artifact_store(self) -> ArtifactStore:
        """The artifact store (submissions, results, releases by content), this data folder's published
        releases and this machine's cache: the one object services that read or write artifacts take."""
        from curation.artifacts import ArtifactStore

        return ArtifactStore.at(self.resolved_data_dir, self.resolved_artifact_dir)

    @property
    def releases_store(self) -> Path:
        """Where cut releases live (one folder and one zip per version; never modified after cutting)."""
        return self.resolved_data_dir / "releases"

    @property
    def llm_cache_dir(self) -> Path:
        """Where LLM answers are cached (keyed by model, base URL, template version, messages, parameters)."""
        return self.resolved_data_dir / "llm-cache"

    def llm_config(self) -> LLMConfig:
        """The LLM client's configuration (not configured when base URL or model is empty)."""
        return LLMConfig(base_url=self.llm_base_url or None, model=self.llm_model or None, api_key=self.llm_api_key,
                         timeout_s=self.llm_timeout_s, max_retries=self.llm_max_retries, cache_dir=self.llm_cache_dir)

    @property
    def datasets_store(self) -> Path:
        """Where registered datasets' ``info.json`` + ``data.csv`` are stored."""
        return self.resolved_data_dir / "datasets"
