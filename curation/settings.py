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

if TYPE_CHECKING:
    from curation.artifacts import ArtifactStore
    from evaluation.llm import LLMConfig

__all__ = ["PROJECT_ROOT", "OIDCConfig", "SessionPolicy", "Settings", "ThrottlePolicy", "endpoint_identity"]

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


@dataclass(frozen=True)
class OIDCConfig:
    """Single sign-on through an OpenID Connect provider (see ``Settings.oidc_*`` for each field)."""

    server_metadata_url: str
    client_id: str
    client_secret: str
    redirect_uri: str
    label: str = "your organisation's sign-in"
    role_claim: str | None = None
    role_map: tuple[tuple[str, str], ...] = ()  # (claim value, role), in the order given
    timeout_s: float = 5.0
    scope: str = "openid profile email"

    @property
    def issuer_hint(self) -> str:
        """The provider's address, for sentences: the discovery URL without its well-known path."""
        return self.server_metadata_url.split("/.well-known/")[0]


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
    worker_retry_wait_s: int = Field(
        default=15, ge=1, le=3600,
        description="Seconds a `forkpaths worker` job that failed for a passing reason (the database away, its run "
                    "still held by a worker that may be alive) waits before it is retried (a fanned-out run's helper "
                    "jobs wait a third of it).")
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
    oidc_issuer: str | None = Field(
        default=None, description="Single sign-on: the OpenID Connect provider's issuer URL (its discovery "
        "document is ISSUER/.well-known/openid-configuration). Empty: local passwords only.")
    oidc_server_metadata_url: str | None = Field(
        default=None, description="Single sign-on: the provider's discovery URL, when it is not under the issuer.")
    oidc_client_id: str | None = None
    oidc_client_secret: SecretStr | None = None
    oidc_redirect_uri: str = Field(
        default="http://localhost:{port}/oauth2callback",
        description="The app's address followed by /oauth2callback, as registered at the provider ({port}: the "
        "app's port).")
    oidc_cookie_secret: SecretStr | None = Field(
        default=None, description="Signs Streamlit's identity cookie; empty: generated once into data_dir.")
    oidc_label: str = Field(default="your organisation's sign-in", description="Shown on the sign-in button.")
    oidc_role_claim: str | None = Field(
        default=None, description="A claim whose value(s) give an SSO account its role (e.g. groups); recomputed "
        "at each sign-in. Without it (or without a match) a new SSO account waits for an admin's approval.")
    oidc_role_map: dict[str, str] = Field(
        default_factory=dict, description='JSON: the claim\'s values and the role each gives, e.g. '
        '{"fp-admins": "admin", "fp-curators": "curator"}; the first listed value the user has wins.')
    oidc_scope: str = Field(default="openid profile email", description="The scopes asked for; add the one "
                            "that carries the role claim if the provider needs it (e.g. groups).")
    oidc_timeout_s: float = Field(default=5.0, gt=0, description="Seconds to wait for the identity provider.")
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

    @field_validator("oidc_role_map")
    @classmethod
    def _known_roles(cls, mapping: dict[str, str]) -> dict[str, str]:
        roles = ("analyst", "curator", "admin", "evaluator")  # curation.models.Role's values (a test keeps them equal)
        for value, role in mapping.items():
            if role not in roles:
                raise ValueError(f"the claim value '{value}' is given the role '{role}', which is not one of "
                                 f"{', '.join(roles)}")
        return mapping

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

    def oidc_config(self) -> OIDCConfig | None:
        """Single sign-on's configuration, or None when it is not configured (no issuer or client id).

        """
        metadata = self.oidc_server_metadata_url or (
            f"{self.oidc_issuer.rstrip('/')}/.well-known/openid-configuration" if self.oidc_issuer else None)
        if not metadata or not self.oidc_client_id:
            return None
        return OIDCConfig(
            server_metadata_url=metadata, client_id=self.oidc_client_id,
            client_secret=self.oidc_client_secret.get_secret_value() if self.oidc_client_secret else "",
            redirect_uri=self.oidc_redirect_uri, label=self.oidc_label, role_claim=self.oidc_role_claim or None,
            role_map=tuple(self.oidc_role_map.items()), timeout_s=self.oidc_timeout_s,
            scope=self.oidc_scope,
        )

    @property
    def oidc_cookie_secret_file(self) -> Path:
        """Where a generated secret for Streamlit's identity cookie is kept (when FORKPATHS_OIDC_COOKIE_SECRET
        is unset), so that a restart does not sign everyone out of the provider."""
        return self.resolved_data_dir / "sso-cookie-secret.txt"

    @property
    def streamlit_secrets_file(self) -> Path:
        """The ``[auth]`` section that `forkpaths run` writes for Streamlit from the FORKPATHS_OIDC_* settings."""
        return self.resolved_data_dir / "streamlit-secrets.toml"

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
        from evaluation.llm import LLMConfig  # the LLM client: not for the commands that call no model

        return LLMConfig(base_url=self.llm_base_url or None, model=self.llm_model or None, api_key=self.llm_api_key,
                         timeout_s=self.llm_timeout_s, max_retries=self.llm_max_retries, cache_dir=self.llm_cache_dir)

    @property
    def datasets_store(self) -> Path:
        """Where registered datasets' ``info.json`` + ``data.csv`` are stored."""
        return self.resolved_data_dir / "datasets"
