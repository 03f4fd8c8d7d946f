"""The component provider, for Pulumi programs in any language: `pulumi package add` runs this
repository as a plugin (PulumiPlugin.yaml), which serves the components of `gpucloud.components`
(docs/guides/components.md). The stack program is `infra/__main__.py` (Pulumi.yaml `main: infra/`)."""

from gpucloud.component_provider import main

if __name__ == "__main__":
    main()
