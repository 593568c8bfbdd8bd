"""Settings, read once at the edge (app start, CLI) from ``FORKPATHS_*`` environment variables or ``.env``.

Domain code never reads the environment: it receives these values (or the small config objects built from
them, such as :class:`curation.sandbox.SandboxLimits`) as arguments.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

__all__ = ["PROJECT_ROOT", "Settings"]

PROJECT_ROOT = Path(__file__).resolve().parents[1]


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
    sandbox_timeout_s: float = Field(default=30.0, gt=0)
    sandbox_memory_mb: int = Field(default=4096, gt=64)
    llm_base_url: str | None = None
    llm_model: str | None = None
    llm_api_key: SecretStr | None = None

    @property
    def resolved_data_dir(self) -> Path:
        return self.data_dir.expanduser().resolve()

    @property
    def resolved_database_url(self) -> str:
        if self.database_url:
            return self.database_url
        return f"sqlite:///{self.resolved_data_dir / 'forkpaths.db'}"

    @property
    def max_upload_bytes(self) -> int:
        return int(self.max_upload_mb * 1024 * 1024)

    @property
    def releases_store(self) -> Path:
        """Where cut releases live (one folder and one zip per version; never modified after cutting)."""
        return self.resolved_data_dir / "releases"

    @property
    def datasets_store(self) -> Path:
        """Where registered datasets' ``info.json`` + ``data.csv`` are stored."""
        return self.resolved_data_dir / "datasets"
