# The os-audit CLI; by default the projector daemon (`os-audit project`).
#   docker build -t os-audit .
#   docker run --rm -e DATABASE_URL=postgres://… os-audit migrate
# docker-compose.yml builds it for its `migrate` and `projector` services.

FROM node:20-bookworm-slim AS build
WORKDIR /app
# The dependencies first, so that this layer is reused until the lock file changes. Without
# --ignore-scripts, npm ci would run `prepare` (the build) before the sources are here.
COPY package.json package-lock.json ./
RUN npm ci --ignore-scripts
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
COPY projections ./projections
COPY migrations ./migrations
COPY scripts/bundle-cli.ts ./scripts/
# dist/: the library, the projection and the migrations, compiled; dist/cli: the CLI, bundled.
RUN npm run build

FROM node:20-bookworm-slim
ENV NODE_ENV=production
WORKDIR /app
# Production dependencies only. --omit=optional leaves out embedded-postgres's server binaries
# (the image always talks to a server; with --ignore-scripts they would not run anyway).
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --omit=optional --ignore-scripts && npm cache clean --force
COPY --from=build /app/dist ./dist
USER node
ENTRYPOINT ["node", "dist/cli/os-audit.cjs"]
CMD ["project"]
