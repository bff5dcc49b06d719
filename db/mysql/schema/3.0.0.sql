-- Agno 3.0.0 layout for MySQL/MariaDB. {name} is a table name, {name_q} the quoted
-- table name. Sections start with `-- +table KIND`; statements end with `;`.

-- +table sessions
CREATE TABLE IF NOT EXISTS {sessions_q} (
    session_id VARCHAR(255) PRIMARY KEY NOT NULL,
    session_type VARCHAR(255) NOT NULL,
    agent_id VARCHAR(255),
    team_id VARCHAR(255),
    workflow_id VARCHAR(255),
    user_id VARCHAR(255),
    session_data JSON,
    agent_data JSON,
    team_data JSON,
    workflow_data JSON,
    metadata JSON,
    summary JSON,
    created_at BIGINT NOT NULL,
    updated_at BIGINT
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
CREATE INDEX IF NOT EXISTS `idx_{sessions}_session_type` ON {sessions_q} (session_type);
CREATE INDEX IF NOT EXISTS `idx_{sessions}_user_id` ON {sessions_q} (user_id);
CREATE INDEX IF NOT EXISTS `idx_{sessions}_created_at` ON {sessions_q} (created_at);

-- +table runs
CREATE TABLE IF NOT EXISTS {runs_q} (
    run_id VARCHAR(255) PRIMARY KEY NOT NULL,
    session_id VARCHAR(255) NOT NULL,
    run_type VARCHAR(255) NOT NULL,
    agent_id VARCHAR(255),
    team_id VARCHAR(255),
    workflow_id VARCHAR(255),
    user_id VARCHAR(255),
    parent_run_id VARCHAR(255),
    status VARCHAR(255),
    run_index BIGINT,
    run_data JSON NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT,
    CONSTRAINT `fk_{runs}_session_id` FOREIGN KEY (session_id) REFERENCES {sessions_q} (session_id) ON DELETE CASCADE
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
-- Fewer indexes than Agno declares (docs/runs-indexes.md): session_id is
-- the composite's prefix (it also serves the foreign key); run_type has no query
-- of its own. MariaDB has no partial indexes, so the others stay.
CREATE INDEX IF NOT EXISTS `idx_{runs}_session_id_run_index` ON {runs_q} (session_id, run_index);
CREATE INDEX IF NOT EXISTS `idx_{runs}_agent_id` ON {runs_q} (agent_id);
CREATE INDEX IF NOT EXISTS `idx_{runs}_team_id` ON {runs_q} (team_id);
CREATE INDEX IF NOT EXISTS `idx_{runs}_workflow_id` ON {runs_q} (workflow_id);
CREATE INDEX IF NOT EXISTS `idx_{runs}_user_id` ON {runs_q} (user_id);
CREATE INDEX IF NOT EXISTS `idx_{runs}_status` ON {runs_q} (status);
CREATE INDEX IF NOT EXISTS `idx_{runs}_created_at` ON {runs_q} (created_at);

-- +table memories
CREATE TABLE IF NOT EXISTS {memories_q} (
    memory_id VARCHAR(255) PRIMARY KEY NOT NULL,
    memory JSON NOT NULL,
    feedback TEXT,
    input TEXT,
    agent_id VARCHAR(255),
    team_id VARCHAR(255),
    user_id VARCHAR(255),
    topics JSON,
    created_at BIGINT,
    updated_at BIGINT
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
CREATE INDEX IF NOT EXISTS `idx_{memories}_user_id` ON {memories_q} (user_id);
CREATE INDEX IF NOT EXISTS `idx_{memories}_created_at` ON {memories_q} (created_at);
CREATE INDEX IF NOT EXISTS `idx_{memories}_updated_at` ON {memories_q} (updated_at);

-- +table metrics
CREATE TABLE IF NOT EXISTS {metrics_q} (
    id VARCHAR(255) PRIMARY KEY NOT NULL,
    agent_runs_count BIGINT NOT NULL DEFAULT 0,
    team_runs_count BIGINT NOT NULL DEFAULT 0,
    workflow_runs_count BIGINT NOT NULL DEFAULT 0,
    agent_sessions_count BIGINT NOT NULL DEFAULT 0,
    team_sessions_count BIGINT NOT NULL DEFAULT 0,
    workflow_sessions_count BIGINT NOT NULL DEFAULT 0,
    users_count BIGINT NOT NULL DEFAULT 0,
    token_metrics JSON NOT NULL,
    model_metrics JSON NOT NULL,
    date DATE NOT NULL,
    aggregation_period VARCHAR(255) NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT,
    completed BOOLEAN NOT NULL DEFAULT FALSE,
    user_id VARCHAR(255) NOT NULL DEFAULT '',
    CONSTRAINT `uq_{metrics}_user_date_period` UNIQUE (user_id, date, aggregation_period)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
CREATE INDEX IF NOT EXISTS `idx_{metrics}_date` ON {metrics_q} (date);
CREATE INDEX IF NOT EXISTS `idx_{metrics}_user_id` ON {metrics_q} (user_id);

-- +table evals
CREATE TABLE IF NOT EXISTS {evals_q} (
    run_id VARCHAR(255) PRIMARY KEY NOT NULL,
    eval_type VARCHAR(255) NOT NULL,
    eval_data JSON NOT NULL,
    eval_input JSON,
    name VARCHAR(255),
    agent_id VARCHAR(255),
    team_id VARCHAR(255),
    workflow_id VARCHAR(255),
    model_id VARCHAR(255),
    model_provider VARCHAR(255),
    evaluated_component_name VARCHAR(255),
    created_at BIGINT NOT NULL,
    updated_at BIGINT,
    user_id VARCHAR(255)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
CREATE INDEX IF NOT EXISTS `idx_{evals}_created_at` ON {evals_q} (created_at);
CREATE INDEX IF NOT EXISTS `idx_{evals}_user_id` ON {evals_q} (user_id);

-- +table knowledge
CREATE TABLE IF NOT EXISTS {knowledge_q} (
    id VARCHAR(255) PRIMARY KEY NOT NULL,
    name VARCHAR(255) NOT NULL,
    description TEXT NOT NULL,
    metadata JSON,
    type VARCHAR(255),
    size BIGINT,
    linked_to VARCHAR(255),
    access_count BIGINT,
    status VARCHAR(255),
    status_message TEXT,
    created_at BIGINT,
    updated_at BIGINT,
    external_id VARCHAR(255),
    user_id VARCHAR(255)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
CREATE INDEX IF NOT EXISTS `idx_{knowledge}_user_id` ON {knowledge_q} (user_id);

-- +table versions
CREATE TABLE IF NOT EXISTS {versions_q} (
    table_name VARCHAR(255) PRIMARY KEY NOT NULL,
    version VARCHAR(64) NOT NULL,
    created_at VARCHAR(64) NOT NULL,
    updated_at VARCHAR(64)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- +table tool_results
CREATE TABLE IF NOT EXISTS {tool_results_q} (
    result_id VARCHAR(255) PRIMARY KEY NOT NULL,
    namespace VARCHAR(128) NOT NULL,
    path VARCHAR(512) NOT NULL,
    session_id VARCHAR(255),
    run_id VARCHAR(255),
    tool_call_id VARCHAR(255),
    tool_name VARCHAR(255),
    args_hash VARCHAR(255),
    content_type VARCHAR(255),
    size_bytes BIGINT NOT NULL DEFAULT 0,
    line_count BIGINT NOT NULL DEFAULT 0,
    preview TEXT,
    user_id VARCHAR(255),
    created_at BIGINT NOT NULL,
    expires_at BIGINT,
    CONSTRAINT `uq_{tool_results}_namespace_path` UNIQUE (namespace, path)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
CREATE INDEX IF NOT EXISTS `idx_{tool_results}_expires_at` ON {tool_results_q} (expires_at);
CREATE INDEX IF NOT EXISTS `idx_{tool_results}_session_id` ON {tool_results_q} (session_id);
CREATE INDEX IF NOT EXISTS `idx_{tool_results}_user_id` ON {tool_results_q} (user_id);

-- +table fs
CREATE TABLE IF NOT EXISTS {fs_q} (
    namespace VARCHAR(128) NOT NULL,
    path VARCHAR(512) NOT NULL,
    content LONGBLOB,
    size_bytes BIGINT NOT NULL DEFAULT 0,
    version BIGINT NOT NULL DEFAULT 1,
    created_at BIGINT NOT NULL,
    updated_at BIGINT,
    PRIMARY KEY (namespace, path)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- +table run_steps
CREATE TABLE IF NOT EXISTS {run_steps_q} (
    run_id VARCHAR(255) NOT NULL,
    step_key VARCHAR(255) NOT NULL,
    kind VARCHAR(16) NOT NULL,
    attempt BIGINT NOT NULL,
    status VARCHAR(16) NOT NULL,
    request LONGTEXT,
    result LONGTEXT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (run_id, step_key)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- +table learnings
CREATE TABLE IF NOT EXISTS {learnings_q} (
    learning_id VARCHAR(255) PRIMARY KEY NOT NULL,
    learning_type VARCHAR(255) NOT NULL,
    namespace VARCHAR(255),
    user_id VARCHAR(255),
    agent_id VARCHAR(255),
    team_id VARCHAR(255),
    workflow_id VARCHAR(255),
    session_id VARCHAR(255),
    entity_id VARCHAR(255),
    entity_type VARCHAR(255),
    content JSON NOT NULL,
    metadata JSON,
    created_at BIGINT NOT NULL,
    updated_at BIGINT
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
CREATE INDEX IF NOT EXISTS `idx_{learnings}_learning_type` ON {learnings_q} (learning_type);
CREATE INDEX IF NOT EXISTS `idx_{learnings}_namespace` ON {learnings_q} (namespace);
CREATE INDEX IF NOT EXISTS `idx_{learnings}_user_id` ON {learnings_q} (user_id);
CREATE INDEX IF NOT EXISTS `idx_{learnings}_agent_id` ON {learnings_q} (agent_id);
CREATE INDEX IF NOT EXISTS `idx_{learnings}_team_id` ON {learnings_q} (team_id);
CREATE INDEX IF NOT EXISTS `idx_{learnings}_workflow_id` ON {learnings_q} (workflow_id);
CREATE INDEX IF NOT EXISTS `idx_{learnings}_session_id` ON {learnings_q} (session_id);
CREATE INDEX IF NOT EXISTS `idx_{learnings}_entity_id` ON {learnings_q} (entity_id);
CREATE INDEX IF NOT EXISTS `idx_{learnings}_entity_type` ON {learnings_q} (entity_type);
CREATE INDEX IF NOT EXISTS `idx_{learnings}_created_at` ON {learnings_q} (created_at);

-- +table approvals
CREATE TABLE IF NOT EXISTS {approvals_q} (
    id VARCHAR(255) PRIMARY KEY NOT NULL,
    run_id VARCHAR(255) NOT NULL,
    session_id VARCHAR(255) NOT NULL,
    status VARCHAR(255) NOT NULL,
    source_type VARCHAR(255) NOT NULL,
    approval_type VARCHAR(255),
    pause_type VARCHAR(255) NOT NULL,
    tool_name VARCHAR(255),
    tool_args JSON,
    expires_at BIGINT,
    agent_id VARCHAR(255),
    team_id VARCHAR(255),
    workflow_id VARCHAR(255),
    user_id VARCHAR(255),
    schedule_id VARCHAR(255),
    schedule_run_id VARCHAR(255),
    source_name VARCHAR(255),
    requirements JSON,
    context JSON,
    resolution_data JSON,
    resolved_by VARCHAR(255),
    resolved_at BIGINT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT,
    run_status VARCHAR(255)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
CREATE INDEX IF NOT EXISTS `idx_{approvals}_run_id` ON {approvals_q} (run_id);
CREATE INDEX IF NOT EXISTS `idx_{approvals}_session_id` ON {approvals_q} (session_id);
CREATE INDEX IF NOT EXISTS `idx_{approvals}_status` ON {approvals_q} (status);
CREATE INDEX IF NOT EXISTS `idx_{approvals}_source_type` ON {approvals_q} (source_type);
CREATE INDEX IF NOT EXISTS `idx_{approvals}_approval_type` ON {approvals_q} (approval_type);
CREATE INDEX IF NOT EXISTS `idx_{approvals}_pause_type` ON {approvals_q} (pause_type);
CREATE INDEX IF NOT EXISTS `idx_{approvals}_agent_id` ON {approvals_q} (agent_id);
CREATE INDEX IF NOT EXISTS `idx_{approvals}_team_id` ON {approvals_q} (team_id);
CREATE INDEX IF NOT EXISTS `idx_{approvals}_workflow_id` ON {approvals_q} (workflow_id);
CREATE INDEX IF NOT EXISTS `idx_{approvals}_user_id` ON {approvals_q} (user_id);
CREATE INDEX IF NOT EXISTS `idx_{approvals}_schedule_id` ON {approvals_q} (schedule_id);
CREATE INDEX IF NOT EXISTS `idx_{approvals}_schedule_run_id` ON {approvals_q} (schedule_run_id);
CREATE INDEX IF NOT EXISTS `idx_{approvals}_created_at` ON {approvals_q} (created_at);
CREATE INDEX IF NOT EXISTS `idx_{approvals}_run_status` ON {approvals_q} (run_status);

-- +table traces
CREATE TABLE IF NOT EXISTS {traces_q} (
    trace_id VARCHAR(255) PRIMARY KEY NOT NULL,
    name VARCHAR(255) NOT NULL,
    status VARCHAR(255) NOT NULL,
    start_time VARCHAR(255) NOT NULL,
    end_time VARCHAR(255) NOT NULL,
    duration_ms BIGINT NOT NULL,
    run_id VARCHAR(255),
    session_id VARCHAR(255),
    user_id VARCHAR(255),
    agent_id VARCHAR(255),
    team_id VARCHAR(255),
    workflow_id VARCHAR(255),
    created_at VARCHAR(255) NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
CREATE INDEX IF NOT EXISTS `idx_{traces}_status` ON {traces_q} (status);
CREATE INDEX IF NOT EXISTS `idx_{traces}_start_time` ON {traces_q} (start_time);
CREATE INDEX IF NOT EXISTS `idx_{traces}_run_id` ON {traces_q} (run_id);
CREATE INDEX IF NOT EXISTS `idx_{traces}_session_id` ON {traces_q} (session_id);
CREATE INDEX IF NOT EXISTS `idx_{traces}_user_id` ON {traces_q} (user_id);
CREATE INDEX IF NOT EXISTS `idx_{traces}_agent_id` ON {traces_q} (agent_id);
CREATE INDEX IF NOT EXISTS `idx_{traces}_team_id` ON {traces_q} (team_id);
CREATE INDEX IF NOT EXISTS `idx_{traces}_workflow_id` ON {traces_q} (workflow_id);
CREATE INDEX IF NOT EXISTS `idx_{traces}_created_at` ON {traces_q} (created_at);

-- +table spans
CREATE TABLE IF NOT EXISTS {spans_q} (
    span_id VARCHAR(255) PRIMARY KEY NOT NULL,
    trace_id VARCHAR(255) NOT NULL,
    parent_span_id VARCHAR(255),
    name VARCHAR(255) NOT NULL,
    span_kind VARCHAR(255) NOT NULL,
    status_code VARCHAR(255) NOT NULL,
    status_message TEXT,
    start_time VARCHAR(255) NOT NULL,
    end_time VARCHAR(255) NOT NULL,
    duration_ms BIGINT NOT NULL,
    attributes JSON,
    created_at VARCHAR(255) NOT NULL,
    CONSTRAINT `fk_{spans}_trace_id` FOREIGN KEY (trace_id) REFERENCES {traces_q} (trace_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
CREATE INDEX IF NOT EXISTS `idx_{spans}_trace_id` ON {spans_q} (trace_id);
CREATE INDEX IF NOT EXISTS `idx_{spans}_parent_span_id` ON {spans_q} (parent_span_id);
CREATE INDEX IF NOT EXISTS `idx_{spans}_start_time` ON {spans_q} (start_time);
CREATE INDEX IF NOT EXISTS `idx_{spans}_created_at` ON {spans_q} (created_at);
-- +table schedules
CREATE TABLE IF NOT EXISTS {schedules_q} (
    id VARCHAR(255) PRIMARY KEY NOT NULL,
    name VARCHAR(255) NOT NULL,
    description TEXT,
    method VARCHAR(255) NOT NULL,
    endpoint VARCHAR(255) NOT NULL,
    payload JSON,
    cron_expr VARCHAR(255) NOT NULL,
    timezone VARCHAR(255) NOT NULL,
    timeout_seconds BIGINT NOT NULL,
    max_retries BIGINT NOT NULL,
    retry_delay_seconds BIGINT NOT NULL,
    enabled BOOLEAN NOT NULL,
    next_run_at BIGINT,
    locked_by VARCHAR(255),
    locked_at BIGINT,
    user_id VARCHAR(255),
    managed_by VARCHAR(255),
    target_type VARCHAR(255),
    target_id VARCHAR(255),
    created_by_run_id VARCHAR(255),
    created_by_session_id VARCHAR(255),
    updated_by_run_id VARCHAR(255),
    updated_by_session_id VARCHAR(255),
    disabled_reason VARCHAR(255),
    created_at BIGINT NOT NULL,
    updated_at BIGINT
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
CREATE INDEX IF NOT EXISTS `idx_{schedules}_name` ON {schedules_q} (name);
CREATE INDEX IF NOT EXISTS `idx_{schedules}_next_run_at` ON {schedules_q} (next_run_at);
CREATE INDEX IF NOT EXISTS `idx_{schedules}_user_id` ON {schedules_q} (user_id);
CREATE INDEX IF NOT EXISTS `idx_{schedules}_managed_by` ON {schedules_q} (managed_by);
CREATE INDEX IF NOT EXISTS `idx_{schedules}_target_id` ON {schedules_q} (target_id);
CREATE INDEX IF NOT EXISTS `idx_{schedules}_created_at` ON {schedules_q} (created_at);
CREATE INDEX IF NOT EXISTS `idx_{schedules}_enabled_next_run_at` ON {schedules_q} (enabled, next_run_at);
CREATE INDEX IF NOT EXISTS `idx_{schedules}_user_enabled_next_run_at` ON {schedules_q} (user_id, enabled, next_run_at);
CREATE UNIQUE INDEX IF NOT EXISTS `uq_{schedules}_user_name` ON {schedules_q} (user_id, name);

-- +table schedule_runs
CREATE TABLE IF NOT EXISTS {schedule_runs_q} (
    id VARCHAR(255) PRIMARY KEY NOT NULL,
    schedule_id VARCHAR(255) NOT NULL,
    attempt BIGINT NOT NULL,
    triggered_at BIGINT,
    completed_at BIGINT,
    status VARCHAR(255) NOT NULL,
    status_code BIGINT,
    run_id VARCHAR(255),
    session_id VARCHAR(255),
    error TEXT,
    input JSON,
    output JSON,
    requirements JSON,
    user_id VARCHAR(255),
    created_at BIGINT NOT NULL,
    FOREIGN KEY (schedule_id) REFERENCES {schedules_q} (id) ON DELETE CASCADE
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
CREATE INDEX IF NOT EXISTS `idx_{schedule_runs}_schedule_id` ON {schedule_runs_q} (schedule_id);
CREATE INDEX IF NOT EXISTS `idx_{schedule_runs}_status` ON {schedule_runs_q} (status);
CREATE INDEX IF NOT EXISTS `idx_{schedule_runs}_user_id` ON {schedule_runs_q} (user_id);
CREATE INDEX IF NOT EXISTS `idx_{schedule_runs}_created_at` ON {schedule_runs_q} (created_at);
-- +table components
CREATE TABLE IF NOT EXISTS {components_q} (
    component_id VARCHAR(255) PRIMARY KEY NOT NULL,
    component_type VARCHAR(255) NOT NULL,
    name VARCHAR(255),
    user_id VARCHAR(255),
    description TEXT,
    current_version INT,
    metadata JSON,
    created_at BIGINT NOT NULL,
    updated_at BIGINT,
    deleted_at BIGINT
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
CREATE INDEX IF NOT EXISTS `idx_{components}_component_type` ON {components_q} (component_type);
CREATE INDEX IF NOT EXISTS `idx_{components}_name` ON {components_q} (name);
CREATE INDEX IF NOT EXISTS `idx_{components}_user_id` ON {components_q} (user_id);
CREATE INDEX IF NOT EXISTS `idx_{components}_current_version` ON {components_q} (current_version);
CREATE INDEX IF NOT EXISTS `idx_{components}_created_at` ON {components_q} (created_at);

-- +table component_configs
CREATE TABLE IF NOT EXISTS {component_configs_q} (
    component_id VARCHAR(255) NOT NULL,
    version INT NOT NULL,
    label VARCHAR(255),
    stage VARCHAR(255) NOT NULL DEFAULT 'draft',
    config JSON NOT NULL,
    notes TEXT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT,
    deleted_at BIGINT,
    PRIMARY KEY (component_id, version),
    CONSTRAINT `fk_{component_configs}_component_id` FOREIGN KEY (component_id) REFERENCES {components_q} (component_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
CREATE INDEX IF NOT EXISTS `idx_{component_configs}_stage` ON {component_configs_q} (stage);
CREATE INDEX IF NOT EXISTS `idx_{component_configs}_created_at` ON {component_configs_q} (created_at);

-- +table component_links
CREATE TABLE IF NOT EXISTS {component_links_q} (
    parent_component_id VARCHAR(255) NOT NULL,
    parent_version INT NOT NULL,
    link_kind VARCHAR(255) NOT NULL,
    link_key VARCHAR(255) NOT NULL,
    child_component_id VARCHAR(255) NOT NULL,
    child_version INT,
    position INT NOT NULL,
    meta JSON,
    created_at BIGINT,
    updated_at BIGINT,
    PRIMARY KEY (parent_component_id, parent_version, link_kind, link_key),
    CONSTRAINT `fk_{component_links}_parent` FOREIGN KEY (parent_component_id, parent_version) REFERENCES {component_configs_q} (component_id, version),
    CONSTRAINT `fk_{component_links}_child` FOREIGN KEY (child_component_id) REFERENCES {components_q} (component_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
CREATE INDEX IF NOT EXISTS `idx_{component_links}_link_kind` ON {component_links_q} (link_kind);
CREATE INDEX IF NOT EXISTS `idx_{component_links}_child_component_id` ON {component_links_q} (child_component_id);
CREATE INDEX IF NOT EXISTS `idx_{component_links}_created_at` ON {component_links_q} (created_at);
