-- Agno 3.0.0 layout for PostgreSQL. {name} is a table name, {name_q} the quoted
-- table name. Sections start with "-- +table KIND"; statements end with ";".

-- +table sessions
CREATE TABLE IF NOT EXISTS {sessions_q} (
    session_id VARCHAR PRIMARY KEY NOT NULL,
    session_type VARCHAR NOT NULL,
    agent_id VARCHAR,
    team_id VARCHAR,
    workflow_id VARCHAR,
    user_id VARCHAR,
    session_data JSONB,
    agent_data JSONB,
    team_data JSONB,
    workflow_data JSONB,
    metadata JSONB,
    summary JSONB,
    created_at BIGINT NOT NULL,
    updated_at BIGINT
);
CREATE INDEX IF NOT EXISTS "idx_{sessions}_session_type" ON {sessions_q} (session_type);
CREATE INDEX IF NOT EXISTS "idx_{sessions}_user_id" ON {sessions_q} (user_id);
CREATE INDEX IF NOT EXISTS "idx_{sessions}_created_at" ON {sessions_q} (created_at);

-- +table runs
CREATE TABLE IF NOT EXISTS {runs_q} (
    run_id VARCHAR PRIMARY KEY NOT NULL,
    session_id VARCHAR NOT NULL REFERENCES {sessions_q} (session_id) ON DELETE CASCADE,
    run_type VARCHAR NOT NULL,
    agent_id VARCHAR,
    team_id VARCHAR,
    workflow_id VARCHAR,
    user_id VARCHAR,
    parent_run_id VARCHAR,
    status VARCHAR,
    run_index BIGINT,
    run_data JSONB NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT
);
-- Fewer indexes than Agno declares (docs/runs-indexes.md): session_id is
-- the composite's prefix; run_type has no query of its own; agent_id, team_id,
-- workflow_id and user_id leave out the NULLs most runs have. `migrate up` moves
-- a database to this layout, `migrate down 3.0.0` back to Agno's.
CREATE INDEX IF NOT EXISTS "idx_{runs}_session_id_run_index" ON {runs_q} (session_id, run_index);
CREATE INDEX IF NOT EXISTS "idx_{runs}_agent_id_nn" ON {runs_q} (agent_id) WHERE agent_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS "idx_{runs}_team_id_nn" ON {runs_q} (team_id) WHERE team_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS "idx_{runs}_workflow_id_nn" ON {runs_q} (workflow_id) WHERE workflow_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS "idx_{runs}_user_id_nn" ON {runs_q} (user_id) WHERE user_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS "idx_{runs}_status" ON {runs_q} (status);
CREATE INDEX IF NOT EXISTS "idx_{runs}_created_at" ON {runs_q} (created_at);

-- +table memories
CREATE TABLE IF NOT EXISTS {memories_q} (
    memory_id VARCHAR PRIMARY KEY NOT NULL,
    memory JSONB NOT NULL,
    feedback TEXT,
    input TEXT,
    agent_id VARCHAR,
    team_id VARCHAR,
    user_id VARCHAR,
    topics JSONB,
    created_at BIGINT,
    updated_at BIGINT
);
CREATE INDEX IF NOT EXISTS "idx_{memories}_user_id" ON {memories_q} (user_id);
CREATE INDEX IF NOT EXISTS "idx_{memories}_created_at" ON {memories_q} (created_at);
CREATE INDEX IF NOT EXISTS "idx_{memories}_updated_at" ON {memories_q} (updated_at);

-- +table metrics
CREATE TABLE IF NOT EXISTS {metrics_q} (
    id VARCHAR PRIMARY KEY NOT NULL,
    agent_runs_count BIGINT NOT NULL DEFAULT 0,
    team_runs_count BIGINT NOT NULL DEFAULT 0,
    workflow_runs_count BIGINT NOT NULL DEFAULT 0,
    agent_sessions_count BIGINT NOT NULL DEFAULT 0,
    team_sessions_count BIGINT NOT NULL DEFAULT 0,
    workflow_sessions_count BIGINT NOT NULL DEFAULT 0,
    users_count BIGINT NOT NULL DEFAULT 0,
    token_metrics JSONB NOT NULL DEFAULT '{}',
    model_metrics JSONB NOT NULL DEFAULT '{}',
    date DATE NOT NULL,
    aggregation_period VARCHAR NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT,
    completed BOOLEAN NOT NULL DEFAULT FALSE,
    user_id VARCHAR NOT NULL DEFAULT '',
    CONSTRAINT "uq_{metrics}_user_date_period" UNIQUE (user_id, date, aggregation_period)
);
CREATE INDEX IF NOT EXISTS "idx_{metrics}_date" ON {metrics_q} (date);
CREATE INDEX IF NOT EXISTS "idx_{metrics}_user_id" ON {metrics_q} (user_id);

-- +table evals
CREATE TABLE IF NOT EXISTS {evals_q} (
    run_id VARCHAR PRIMARY KEY NOT NULL,
    eval_type VARCHAR NOT NULL,
    eval_data JSONB NOT NULL,
    eval_input JSONB,
    name VARCHAR,
    agent_id VARCHAR,
    team_id VARCHAR,
    workflow_id VARCHAR,
    model_id VARCHAR,
    model_provider VARCHAR,
    evaluated_component_name VARCHAR,
    created_at BIGINT NOT NULL,
    updated_at BIGINT,
    user_id VARCHAR
);
CREATE INDEX IF NOT EXISTS "idx_{evals}_created_at" ON {evals_q} (created_at);
CREATE INDEX IF NOT EXISTS "idx_{evals}_user_id" ON {evals_q} (user_id);

-- +table knowledge
CREATE TABLE IF NOT EXISTS {knowledge_q} (
    id VARCHAR PRIMARY KEY NOT NULL,
    name VARCHAR NOT NULL,
    description TEXT NOT NULL,
    metadata JSONB,
    type VARCHAR,
    size BIGINT,
    linked_to VARCHAR,
    access_count BIGINT,
    status VARCHAR,
    status_message TEXT,
    created_at BIGINT,
    updated_at BIGINT,
    external_id VARCHAR,
    user_id VARCHAR
);
CREATE INDEX IF NOT EXISTS "idx_{knowledge}_user_id" ON {knowledge_q} (user_id);

-- +table versions
CREATE TABLE IF NOT EXISTS {versions_q} (
    table_name VARCHAR PRIMARY KEY NOT NULL,
    version VARCHAR NOT NULL,
    created_at VARCHAR NOT NULL,
    updated_at VARCHAR
);

-- +table tool_results
CREATE TABLE IF NOT EXISTS {tool_results_q} (
    result_id VARCHAR PRIMARY KEY NOT NULL,
    namespace VARCHAR NOT NULL,
    path VARCHAR NOT NULL,
    session_id VARCHAR,
    run_id VARCHAR,
    tool_call_id VARCHAR,
    tool_name VARCHAR,
    args_hash VARCHAR,
    content_type VARCHAR,
    size_bytes BIGINT NOT NULL DEFAULT 0,
    line_count BIGINT NOT NULL DEFAULT 0,
    preview TEXT,
    user_id VARCHAR,
    created_at BIGINT NOT NULL,
    expires_at BIGINT,
    CONSTRAINT "uq_{tool_results}_namespace_path" UNIQUE (namespace, path)
);
CREATE INDEX IF NOT EXISTS "idx_{tool_results}_expires_at" ON {tool_results_q} (expires_at);
CREATE INDEX IF NOT EXISTS "idx_{tool_results}_session_id" ON {tool_results_q} (session_id);
CREATE INDEX IF NOT EXISTS "idx_{tool_results}_user_id" ON {tool_results_q} (user_id);

-- +table fs
CREATE TABLE IF NOT EXISTS {fs_q} (
    namespace VARCHAR NOT NULL,
    path VARCHAR NOT NULL,
    content BYTEA,
    size_bytes BIGINT NOT NULL DEFAULT 0,
    version BIGINT NOT NULL DEFAULT 1,
    created_at BIGINT NOT NULL,
    updated_at BIGINT,
    PRIMARY KEY (namespace, path)
);

-- +table run_steps
CREATE TABLE IF NOT EXISTS {run_steps_q} (
    run_id VARCHAR NOT NULL,
    step_key VARCHAR NOT NULL,
    kind VARCHAR NOT NULL,
    attempt BIGINT NOT NULL,
    status VARCHAR NOT NULL,
    request TEXT,
    result TEXT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (run_id, step_key)
);

-- +table learnings
CREATE TABLE IF NOT EXISTS {learnings_q} (
    learning_id VARCHAR PRIMARY KEY NOT NULL,
    learning_type VARCHAR NOT NULL,
    namespace VARCHAR,
    user_id VARCHAR,
    agent_id VARCHAR,
    team_id VARCHAR,
    workflow_id VARCHAR,
    session_id VARCHAR,
    entity_id VARCHAR,
    entity_type VARCHAR,
    content JSONB NOT NULL,
    metadata JSONB,
    created_at BIGINT NOT NULL,
    updated_at BIGINT
);
CREATE INDEX IF NOT EXISTS "idx_{learnings}_learning_type" ON {learnings_q} (learning_type);
CREATE INDEX IF NOT EXISTS "idx_{learnings}_namespace" ON {learnings_q} (namespace);
CREATE INDEX IF NOT EXISTS "idx_{learnings}_user_id" ON {learnings_q} (user_id);
CREATE INDEX IF NOT EXISTS "idx_{learnings}_agent_id" ON {learnings_q} (agent_id);
CREATE INDEX IF NOT EXISTS "idx_{learnings}_team_id" ON {learnings_q} (team_id);
CREATE INDEX IF NOT EXISTS "idx_{learnings}_workflow_id" ON {learnings_q} (workflow_id);
CREATE INDEX IF NOT EXISTS "idx_{learnings}_session_id" ON {learnings_q} (session_id);
CREATE INDEX IF NOT EXISTS "idx_{learnings}_entity_id" ON {learnings_q} (entity_id);
CREATE INDEX IF NOT EXISTS "idx_{learnings}_entity_type" ON {learnings_q} (entity_type);
CREATE INDEX IF NOT EXISTS "idx_{learnings}_created_at" ON {learnings_q} (created_at);

-- +table approvals
CREATE TABLE IF NOT EXISTS {approvals_q} (
    id VARCHAR PRIMARY KEY NOT NULL,
    run_id VARCHAR NOT NULL,
    session_id VARCHAR NOT NULL,
    status VARCHAR NOT NULL,
    source_type VARCHAR NOT NULL,
    approval_type VARCHAR,
    pause_type VARCHAR NOT NULL,
    tool_name VARCHAR,
    tool_args JSONB,
    expires_at BIGINT,
    agent_id VARCHAR,
    team_id VARCHAR,
    workflow_id VARCHAR,
    user_id VARCHAR,
    schedule_id VARCHAR,
    schedule_run_id VARCHAR,
    source_name VARCHAR,
    requirements JSONB,
    context JSONB,
    resolution_data JSONB,
    resolved_by VARCHAR,
    resolved_at BIGINT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT,
    run_status VARCHAR
);
CREATE INDEX IF NOT EXISTS "idx_{approvals}_run_id" ON {approvals_q} (run_id);
CREATE INDEX IF NOT EXISTS "idx_{approvals}_session_id" ON {approvals_q} (session_id);
CREATE INDEX IF NOT EXISTS "idx_{approvals}_status" ON {approvals_q} (status);
CREATE INDEX IF NOT EXISTS "idx_{approvals}_source_type" ON {approvals_q} (source_type);
CREATE INDEX IF NOT EXISTS "idx_{approvals}_approval_type" ON {approvals_q} (approval_type);
CREATE INDEX IF NOT EXISTS "idx_{approvals}_pause_type" ON {approvals_q} (pause_type);
CREATE INDEX IF NOT EXISTS "idx_{approvals}_agent_id" ON {approvals_q} (agent_id);
CREATE INDEX IF NOT EXISTS "idx_{approvals}_team_id" ON {approvals_q} (team_id);
CREATE INDEX IF NOT EXISTS "idx_{approvals}_workflow_id" ON {approvals_q} (workflow_id);
CREATE INDEX IF NOT EXISTS "idx_{approvals}_user_id" ON {approvals_q} (user_id);
CREATE INDEX IF NOT EXISTS "idx_{approvals}_schedule_id" ON {approvals_q} (schedule_id);
CREATE INDEX IF NOT EXISTS "idx_{approvals}_schedule_run_id" ON {approvals_q} (schedule_run_id);
CREATE INDEX IF NOT EXISTS "idx_{approvals}_created_at" ON {approvals_q} (created_at);
CREATE INDEX IF NOT EXISTS "idx_{approvals}_run_status" ON {approvals_q} (run_status);

-- +table traces
CREATE TABLE IF NOT EXISTS {traces_q} (
    trace_id VARCHAR PRIMARY KEY NOT NULL,
    name VARCHAR NOT NULL,
    status VARCHAR NOT NULL,
    start_time VARCHAR NOT NULL,
    end_time VARCHAR NOT NULL,
    duration_ms BIGINT NOT NULL,
    run_id VARCHAR,
    session_id VARCHAR,
    user_id VARCHAR,
    agent_id VARCHAR,
    team_id VARCHAR,
    workflow_id VARCHAR,
    created_at VARCHAR NOT NULL
);
CREATE INDEX IF NOT EXISTS "idx_{traces}_status" ON {traces_q} (status);
CREATE INDEX IF NOT EXISTS "idx_{traces}_start_time" ON {traces_q} (start_time);
CREATE INDEX IF NOT EXISTS "idx_{traces}_run_id" ON {traces_q} (run_id);
CREATE INDEX IF NOT EXISTS "idx_{traces}_session_id" ON {traces_q} (session_id);
CREATE INDEX IF NOT EXISTS "idx_{traces}_user_id" ON {traces_q} (user_id);
CREATE INDEX IF NOT EXISTS "idx_{traces}_agent_id" ON {traces_q} (agent_id);
CREATE INDEX IF NOT EXISTS "idx_{traces}_team_id" ON {traces_q} (team_id);
CREATE INDEX IF NOT EXISTS "idx_{traces}_workflow_id" ON {traces_q} (workflow_id);
CREATE INDEX IF NOT EXISTS "idx_{traces}_created_at" ON {traces_q} (created_at);

-- +table spans
CREATE TABLE IF NOT EXISTS {spans_q} (
    span_id VARCHAR PRIMARY KEY NOT NULL,
    trace_id VARCHAR NOT NULL REFERENCES {traces_q} (trace_id),
    parent_span_id VARCHAR,
    name VARCHAR NOT NULL,
    span_kind VARCHAR NOT NULL,
    status_code VARCHAR NOT NULL,
    status_message TEXT,
    start_time VARCHAR NOT NULL,
    end_time VARCHAR NOT NULL,
    duration_ms BIGINT NOT NULL,
    attributes JSONB,
    created_at VARCHAR NOT NULL
);
CREATE INDEX IF NOT EXISTS "idx_{spans}_trace_id" ON {spans_q} (trace_id);
CREATE INDEX IF NOT EXISTS "idx_{spans}_parent_span_id" ON {spans_q} (parent_span_id);
CREATE INDEX IF NOT EXISTS "idx_{spans}_start_time" ON {spans_q} (start_time);
CREATE INDEX IF NOT EXISTS "idx_{spans}_created_at" ON {spans_q} (created_at);
-- +table schedules
CREATE TABLE IF NOT EXISTS {schedules_q} (
    id VARCHAR PRIMARY KEY NOT NULL,
    name VARCHAR NOT NULL,
    description TEXT,
    method VARCHAR NOT NULL,
    endpoint VARCHAR NOT NULL,
    payload JSONB,
    cron_expr VARCHAR NOT NULL,
    timezone VARCHAR NOT NULL,
    timeout_seconds BIGINT NOT NULL,
    max_retries BIGINT NOT NULL,
    retry_delay_seconds BIGINT NOT NULL,
    enabled BOOLEAN NOT NULL,
    next_run_at BIGINT,
    locked_by VARCHAR,
    locked_at BIGINT,
    user_id VARCHAR,
    managed_by VARCHAR,
    target_type VARCHAR,
    target_id VARCHAR,
    created_by_run_id VARCHAR,
    created_by_session_id VARCHAR,
    updated_by_run_id VARCHAR,
    updated_by_session_id VARCHAR,
    disabled_reason VARCHAR,
    created_at BIGINT NOT NULL,
    updated_at BIGINT
);
CREATE INDEX IF NOT EXISTS "idx_{schedules}_name" ON {schedules_q} (name);
CREATE INDEX IF NOT EXISTS "idx_{schedules}_next_run_at" ON {schedules_q} (next_run_at);
CREATE INDEX IF NOT EXISTS "idx_{schedules}_user_id" ON {schedules_q} (user_id);
CREATE INDEX IF NOT EXISTS "idx_{schedules}_managed_by" ON {schedules_q} (managed_by);
CREATE INDEX IF NOT EXISTS "idx_{schedules}_target_id" ON {schedules_q} (target_id);
CREATE INDEX IF NOT EXISTS "idx_{schedules}_created_at" ON {schedules_q} (created_at);
CREATE INDEX IF NOT EXISTS "idx_{schedules}_enabled_next_run_at" ON {schedules_q} (enabled, next_run_at);
CREATE INDEX IF NOT EXISTS "idx_{schedules}_user_enabled_next_run_at" ON {schedules_q} (user_id, enabled, next_run_at);
CREATE UNIQUE INDEX IF NOT EXISTS "uq_{schedules}_user_name" ON {schedules_q} (user_id, name) WHERE user_id IS NOT NULL;
CREATE UNIQUE INDEX IF NOT EXISTS "uq_{schedules}_unowned_name" ON {schedules_q} (name) WHERE user_id IS NULL;

-- +table schedule_runs
CREATE TABLE IF NOT EXISTS {schedule_runs_q} (
    id VARCHAR PRIMARY KEY NOT NULL,
    schedule_id VARCHAR NOT NULL,
    attempt BIGINT NOT NULL,
    triggered_at BIGINT,
    completed_at BIGINT,
    status VARCHAR NOT NULL,
    status_code BIGINT,
    run_id VARCHAR,
    session_id VARCHAR,
    error TEXT,
    input JSONB,
    output JSONB,
    requirements JSONB,
    user_id VARCHAR,
    created_at BIGINT NOT NULL,
    FOREIGN KEY (schedule_id) REFERENCES {schedules_q} (id) ON DELETE CASCADE
);
CREATE INDEX IF NOT EXISTS "idx_{schedule_runs}_schedule_id" ON {schedule_runs_q} (schedule_id);
CREATE INDEX IF NOT EXISTS "idx_{schedule_runs}_status" ON {schedule_runs_q} (status);
CREATE INDEX IF NOT EXISTS "idx_{schedule_runs}_user_id" ON {schedule_runs_q} (user_id);
CREATE INDEX IF NOT EXISTS "idx_{schedule_runs}_created_at" ON {schedule_runs_q} (created_at);
-- +table components
CREATE TABLE IF NOT EXISTS {components_q} (
    component_id VARCHAR PRIMARY KEY NOT NULL,
    component_type VARCHAR NOT NULL,
    name VARCHAR,
    user_id VARCHAR,
    description TEXT,
    current_version INTEGER,
    metadata JSONB,
    created_at BIGINT NOT NULL,
    updated_at BIGINT,
    deleted_at BIGINT
);
CREATE INDEX IF NOT EXISTS "idx_{components}_component_type" ON {components_q} (component_type);
CREATE INDEX IF NOT EXISTS "idx_{components}_name" ON {components_q} (name);
CREATE INDEX IF NOT EXISTS "idx_{components}_user_id" ON {components_q} (user_id);
CREATE INDEX IF NOT EXISTS "idx_{components}_current_version" ON {components_q} (current_version);
CREATE INDEX IF NOT EXISTS "idx_{components}_created_at" ON {components_q} (created_at);

-- +table component_configs
CREATE TABLE IF NOT EXISTS {component_configs_q} (
    component_id VARCHAR NOT NULL,
    version INTEGER NOT NULL,
    label VARCHAR,
    stage VARCHAR NOT NULL DEFAULT 'draft',
    config JSONB NOT NULL,
    notes TEXT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT,
    deleted_at BIGINT,
    PRIMARY KEY (component_id, version),
    CONSTRAINT "fk_{component_configs}_component_id" FOREIGN KEY (component_id) REFERENCES {components_q} (component_id)
);
CREATE INDEX IF NOT EXISTS "idx_{component_configs}_stage" ON {component_configs_q} (stage);
CREATE INDEX IF NOT EXISTS "idx_{component_configs}_created_at" ON {component_configs_q} (created_at);

-- +table component_links
CREATE TABLE IF NOT EXISTS {component_links_q} (
    parent_component_id VARCHAR NOT NULL,
    parent_version INTEGER NOT NULL,
    link_kind VARCHAR NOT NULL,
    link_key VARCHAR NOT NULL,
    child_component_id VARCHAR NOT NULL,
    child_version INTEGER,
    position INTEGER NOT NULL,
    meta JSONB,
    created_at BIGINT,
    updated_at BIGINT,
    PRIMARY KEY (parent_component_id, parent_version, link_kind, link_key),
    CONSTRAINT "fk_{component_links}_parent" FOREIGN KEY (parent_component_id, parent_version) REFERENCES {component_configs_q} (component_id, version),
    CONSTRAINT "fk_{component_links}_child" FOREIGN KEY (child_component_id) REFERENCES {components_q} (component_id)
);
CREATE INDEX IF NOT EXISTS "idx_{component_links}_link_kind" ON {component_links_q} (link_kind);
CREATE INDEX IF NOT EXISTS "idx_{component_links}_child_component_id" ON {component_links_q} (child_component_id);
CREATE INDEX IF NOT EXISTS "idx_{component_links}_created_at" ON {component_links_q} (created_at);
